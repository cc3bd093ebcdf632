"""Hash commands, field expiry (HEXPIRE & co., HGETEX, HSETEX, HGETDEL) included.

Field expiry. As Valkey, which has no lazy expiry of fields, a field past its deadline
stays in its hash until the server's active expiry deletes it (fakekey/core/field_expiry.py:
`hexpired`, `expired_fields`, HDEL to replicas, the emptied hash deleted). Meanwhile every
command sees it as absent (HGET, HEXISTS, HGETALL, HSCAN, HRANDFIELD, HTTL, HEXPIRE,
HDEL, HGETDEL answer as for a missing field; HSET, HSETNX, HINCRBY and HSETEX FNX write it
as a new field, without its deadline) except HLEN, which counts it, and EXISTS, DUMP,
RENAME and MOVE, which keep the hash whole; COPY copies the live fields only.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from fakekey.codecs.longdouble import ld_format, ld_parse, ld_round
from fakekey.codecs.numbers import outside_int64
from fakekey.commands.args import (
    LLONG_MAX,
    LLONG_MIN,
    OVERFLOW,
    SYNTAX,
    parse_int,
    try_int,
    wrong_args,
)
from fakekey.commands.picks import PickChunk, draws, repeated_picks
from fakekey.commands.scan import at_start, bucket_page, hash_order, parse_cursor, parse_scan_options
from fakekey.core.client import Client
from fakekey.core.dirty import FIELD_PAIRS, INTEGER_REPLY
from fakekey.core.field_expiry import count_expired_fields, expire_overwritten
from fakekey.core.registry import command, keys_range
from fakekey.resp.replies import OK, ReplyError
from fakekey.types.hash import HashValue

G = "hash"
NUMFIELDS = ReplyError(
    "ERR numfields should be greater than 0 and match the provided number of fields"
)
HASH_NOT_INTEGER = ReplyError("ERR hash value is not an integer")
HASH_NOT_FLOAT = ReplyError("ERR hash value is not a float")
INCR_NAN_OR_INF = ReplyError("ERR value is NaN or Infinity")
RESULT_NAN_OR_INF = ReplyError("ERR increment would produce NaN or Infinity")
COUNT_RANGE = ReplyError(
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)
OUT_OF_RANGE = ReplyError("ERR value is out of range")
NX_CONFLICT = ReplyError("ERR NX and XX, GT or LT options at the same time are not compatible")
GT_LT_CONFLICT = ReplyError("ERR GT and LT options at the same time are not compatible")

LONG_MAX_HALF = LLONG_MAX // 2  # HRANDFIELD WITHVALUES refuses counts past +-LONG_MAX/2
MS, SECONDS = 1, 1000  # units of an expiry argument, in ms

# Per-field answers of the field-expiry commands.
NO_FIELD, NOT_SET, CONDITION_FAILED, SET_OK, DELETED_NOW = -2, -1, 0, 1, 2


# --- lookup, field expiry and the write funnel ----------------------------------------------


def lookup_hash(c: Client, key: bytes) -> HashValue | None:
    """The hash at `key` (None if absent; WRONGTYPE if not a hash), with any fields past
    their deadline still in it: each command hides them (`get_live`, `has_live`, `live`)."""
    h: HashValue | None = c.db.lookup_type(key, HashValue)  # typed: compiled, a native call
    return h


def fields_now(c: Client) -> int:
    """The time the fields' own deadlines are judged at: the server's, but, on a replica,
    never past for its primary's commands (the primary deletes fields itself, by HDEL)."""
    state = c.state
    upstream = state.upstream
    if upstream is not None and state.current_client is upstream.client:
        return 0
    return state.now


def lookup_live_hash(c: Client, key: bytes) -> HashValue | None:
    """For a whole-hash read: the hash without its fields past their deadline (None if
    none is left, as for a missing key)."""
    h = lookup_hash(c, key)
    if h is None:
        return None
    h = h.live(fields_now(c))
    return h if h else None


def store(c: Client, key: bytes, h: HashValue, is_new: bool, *events: str) -> None:
    """Publish a write through the funnel, its keyspace events in Valkey's order. The
    funnel deletes a hash left empty and announces `del` after the last event."""
    db = c.db
    if is_new and h:
        db.set_value(key, h, event=events[0], klass="h")
        for event in events[1:]:
            db.written(key, event, "h")
        return
    state = db.state
    if is_new and state.notify_flags:  # created and emptied by one command
        state.notify(db, "n", "new", key)
    for event in events[:-1]:
        if state.notify_flags:
            state.notify(db, "h", event, key)
    db.written(key, events[-1], "h")
    if is_new and state.notify_flags:
        state.notify(db, "g", "del", key)


def expire_before_write(c: Client, key: bytes, h: HashValue | None, fields: list[bytes],
                        propagate: bool = False) -> None:
    """Fields about to be written that are past their deadline expire first (hexpired,
    expired_fields), as Valkey's writes expire them (fakekey/core/field_expiry.py)."""
    if h is not None and h.has_ttls():
        expire_overwritten(c.db, key, h, fields, fields_now(c), propagate)


def limits(c: Client) -> tuple[int, int]:
    return c.state.config.hash_limits()


def set_fields(c: Client, h: HashValue, pairs: list[bytes], keep_ttl: bool = False) -> int:
    """Set field/value pairs with hashTypeSet's conversions; returns how many were new."""
    entries, value_limit = limits(c)
    return set_pairs(h, pairs, keep_ttl, entries, value_limit)


def set_pairs(h: HashValue, pairs: list[bytes], keep_ttl: bool, entries: int, value_limit: int) -> int:
    """set_fields with the listpack limits already read."""
    created = 0
    for i in range(0, len(pairs), 2):
        field, value = pairs[i], pairs[i + 1]
        created += h.set(field, value, keep_ttl)
        h.convert_after_set(field, value, entries, value_limit)
    return created


# --- setting and reading fields -------------------------------------------------------------


def hset_generic(c: Client, argv: list[bytes], name: str) -> int:
    if len(argv) % 2:
        raise wrong_args(name)
    key = argv[1]
    h = lookup_hash(c, key)
    is_new = h is None
    if h is None:
        h = HashValue()
    entries, value_limit = limits(c)  # a *call compiled is a generic call
    pairs = argv[2:]
    expire_before_write(c, key, h, pairs[::2])
    h.convert_for_write(pairs, entries, value_limit)
    created = set_pairs(h, pairs, False, entries, value_limit)
    if is_new:
        store(c, key, h, True, "hset")
    else:  # the hash at `key`, just looked up, and not empty: store's one step
        c.db.written_value(key, h, "hset", "h")
    return created


@command("hset", -4, "write denyoom fast", keys=keys_range(1, flags="RW update"), acl="hash",
         group=G, since="2.0.0",
         complexity="O(1) for each field/value pair added, so O(N) to add N field/value "
         "pairs when the command is called with multiple field/value pairs.",
         summary="Sets one or more fields of a hash; answers how many fields were new.", dirty=FIELD_PAIRS)
def hset(c: Client, argv: list[bytes]) -> Any:
    return hset_generic(c, argv, "hset")


@command("hmset", -4, "write denyoom fast", keys=keys_range(1, flags="RW update"), acl="hash",
         group=G, since="2.0.0", complexity="O(N) where N is the number of fields being set.",
         summary="Sets one or more fields of a hash (the older form of HSET, answering OK).", dirty=FIELD_PAIRS)
def hmset(c: Client, argv: list[bytes]) -> Any:
    hset_generic(c, argv, "hmset")
    return OK


@command("hsetnx", 4, "write denyoom fast", keys=keys_range(1, flags="RW insert"), acl="hash",
         group=G, since="2.0.0",
         summary="Sets a field of a hash only if the field does not exist yet.")
def hsetnx(c: Client, argv: list[bytes]) -> Any:
    key, field = argv[1], argv[2]
    h = lookup_hash(c, key)
    if h is not None and h.has_live(field, fields_now(c)):
        return 0
    expire_before_write(c, key, h, [field])
    is_new = h is None
    if h is None:
        h = HashValue()
    entries, value_limit = limits(c)
    h.convert_for_write(argv[2:4], entries, value_limit)
    set_fields(c, h, argv[2:4])
    store(c, key, h, is_new, "hset")
    return 1


@command("hget", 3, "readonly fast", keys=keys_range(1, flags="RO access"), acl="hash",
         group=G, since="2.0.0", summary="Reads the value of one field of a hash.")
def hget(c: Client, argv: list[bytes]) -> Any:
    h = lookup_hash(c, argv[1])
    return None if h is None else h.get_live(argv[2], fields_now(c))


@command("hmget", -3, "readonly fast", keys=keys_range(1, flags="RO access"), acl="hash",
         group=G, since="2.0.0",
         complexity="O(N) where N is the number of fields being requested.",
         summary="Reads the values of several fields of a hash (null for each missing one).")
def hmget(c: Client, argv: list[bytes]) -> Any:
    h = lookup_hash(c, argv[1])
    if h is None:
        return [None] * (len(argv) - 2)
    now = fields_now(c)
    return [h.get_live(field, now) for field in argv[2:]]


@command("hgetall", 2, "readonly", keys=keys_range(1, flags="RO access"), acl="hash", group=G,
         since="2.0.0", complexity="O(N) where N is the size of the hash.",
         tips="nondeterministic_output_order",
         summary="Reads every field and value of a hash (a map in RESP3).")
def hgetall(c: Client, argv: list[bytes]) -> Any:
    h = lookup_live_hash(c, argv[1])
    return {} if h is None else h.as_dict()


@command("hkeys", 2, "readonly", keys=keys_range(1, flags="RO access"), acl="hash", group=G,
         since="2.0.0", complexity="O(N) where N is the size of the hash.",
         tips="nondeterministic_output_order", summary="Lists the fields of a hash.")
def hkeys(c: Client, argv: list[bytes]) -> Any:
    h = lookup_live_hash(c, argv[1])
    return [] if h is None else h.field_names()


@command("hvals", 2, "readonly", keys=keys_range(1, flags="RO access"), acl="hash", group=G,
         since="2.0.0", complexity="O(N) where N is the size of the hash.",
         tips="nondeterministic_output_order", summary="Lists the values of a hash.")
def hvals(c: Client, argv: list[bytes]) -> Any:
    h = lookup_live_hash(c, argv[1])
    return [] if h is None else h.values()


@command("hdel", -3, "write fast", keys=keys_range(1, flags="RW delete"), acl="hash", group=G,
         since="2.0.0", complexity="O(N) where N is the number of fields to be removed.",
         summary="Deletes fields of a hash, and the hash once empty; answers how many went.", dirty=INTEGER_REPLY)
def hdel(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    h = lookup_hash(c, key)
    if h is None:
        return 0
    now = fields_now(c)  # a field past its deadline is not there to delete
    deleted = sum(not h.expired(field, now) and h.delete(field) for field in argv[2:])
    if deleted:
        store(c, key, h, False, "hdel")
    return deleted


@command("hlen", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl="hash", group=G,
         since="2.0.0", summary="Counts the fields of a hash.")
def hlen(c: Client, argv: list[bytes]) -> Any:
    # fields past their deadline count until active expiry deletes them, as Valkey's
    h = lookup_hash(c, argv[1])
    return 0 if h is None else len(h)


@command("hexists", 3, "readonly fast", keys=keys_range(1, flags="RO"), acl="hash", group=G,
         since="2.0.0", summary="Tells whether a field exists in a hash.")
def hexists(c: Client, argv: list[bytes]) -> Any:
    h = lookup_hash(c, argv[1])
    return int(h is not None and h.has_live(argv[2], fields_now(c)))


@command("hstrlen", 3, "readonly fast", keys=keys_range(1, flags="RO"), acl="hash", group=G,
         since="3.2.0", summary="Answers the length of the value of a hash field (0 if absent).")
def hstrlen(c: Client, argv: list[bytes]) -> Any:
    h = lookup_hash(c, argv[1])
    value = None if h is None else h.get_live(argv[2], fields_now(c))
    return 0 if value is None else len(value)


# --- counters ------------------------------------------------------------------------------


@command("hincrby", 4, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="hash", group=G, since="2.0.0",
         summary="Adds an integer to the integer value of a hash field (0 if absent).")
def hincrby(c: Client, argv: list[bytes]) -> Any:
    key, field = argv[1], argv[2]
    increment = parse_int(argv[3])
    h = lookup_hash(c, key)
    current = None if h is None else h.get_live(field, fields_now(c))
    value = 0 if current is None else try_int(current)
    if value is None:
        raise HASH_NOT_INTEGER
    value += increment
    if outside_int64(value):
        raise OVERFLOW
    write_counter(c, key, h, field, b"%d" % value, "hincrby")
    return value


@command("hincrbyfloat", 4, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl="hash", group=G, since="2.6.0",
         summary="Adds a floating-point number to the value of a hash field (0 if absent); "
         "long double arithmetic, as Valkey.")
def hincrbyfloat(c: Client, argv: list[bytes]) -> Any:
    key, field = argv[1], argv[2]
    increment = ld_parse(argv[3])
    if isinstance(increment, float):
        raise INCR_NAN_OR_INF  # strtold accepted an infinity
    h = lookup_hash(c, key)
    current = None if h is None else h.get_live(field, fields_now(c))
    value: Fraction | float = Fraction(0)
    if current is not None:
        try:
            value = ld_parse(current)
        except ReplyError as err:
            err.__traceback__ = None  # a shared instance: its traceback would keep growing
            raise HASH_NOT_FLOAT from None
    if isinstance(value, float):
        raise RESULT_NAN_OR_INF  # the field holds an infinity
    total = ld_round(value + increment)
    if isinstance(total, float):
        raise RESULT_NAN_OR_INF
    text = ld_format(total)
    write_counter(c, key, h, field, text, "hincrbyfloat")
    return text


def write_counter(c: Client, key: bytes, h: HashValue | None, field: bytes, value: bytes,
                  event: str) -> None:
    """Store a counter's new value; the field keeps its TTL."""
    expire_before_write(c, key, h, [field])
    is_new = h is None
    if h is None:
        h = HashValue()
    set_fields(c, h, [field, value], keep_ttl=True)
    store(c, key, h, is_new, event)


# --- HRANDFIELD ----------------------------------------------------------------------------


@command("hrandfield", -2, "readonly", keys=keys_range(1, flags="RO access"), acl="hash",
         group=G, since="6.2.0", complexity="O(N) where N is the number of fields returned",
         tips="nondeterministic_output",
         summary="Answers random fields of a hash (a negative count allows repeats), "
         "optionally with their values.")
def hrandfield(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 2:
        h = lookup_live_hash(c, argv[1])
        return None if h is None else random.choice(h.field_names())
    count = parse_int(argv[2])
    if count == LLONG_MIN:
        raise COUNT_RANGE
    withvalues = len(argv) == 4
    if len(argv) > 4 or (withvalues and argv[3].lower() != b"withvalues"):
        raise SYNTAX
    if withvalues and not -LONG_MAX_HALF <= count <= LONG_MAX_HALF:
        raise OUT_OF_RANGE
    h = lookup_live_hash(c, argv[1])
    if h is None or count == 0:
        return []
    if count < 0:
        flat = withvalues and c.protocol == 2
        return repeated_picks(c, -count, lambda k: field_draws(h, withvalues, c.protocol, False)(k),
                              lambda: field_draws(h, withvalues, c.protocol, True), 2 if flat else 1)
    return with_values(random_fields(h, count), h.mapping(), c.protocol) if withvalues else random_fields(h, count)


def with_values(fields: list[bytes], values: Mapping[bytes, bytes], protocol: int) -> list[Any]:
    """Fields with their values: a flat array in RESP2, [field, value] pairs in RESP3."""
    if protocol == 3:
        return [[f, values[f]] for f in fields]
    return [x for f in fields for x in (f, values[f])]


def field_draws(h: HashValue, withvalues: bool, protocol: int, snapshot: bool) -> PickChunk:
    """k random fields (repeats allowed), with their values if asked: from the hash as
    it is now when `snapshot` (a streamed reply), else from the live hash."""
    fields = h.field_names()
    values = h.as_dict() if snapshot and withvalues else h.mapping() if withvalues else {}
    if not withvalues:
        return draws(fields)
    return lambda k: with_values(random.choices(fields, k=k), values, protocol)


def random_fields(h: HashValue, count: int) -> list[bytes]:
    """Distinct fields: all of them in order when count covers the hash, else a sample
    in hash order (as a listpack)."""
    if count >= len(h):
        return h.field_names()
    if count == 1:
        return [random.choice(h.field_names())]
    return h.random_fields(count)


# --- HSCAN ---------------------------------------------------------------------------------


@command("hscan", -3, "readonly", keys=keys_range(1, flags="RO access"), acl="hash", group=G,
         since="2.8.0",
         complexity="O(1) for every call. O(N) for a complete iteration, including enough "
         "command calls for the cursor to return back to 0. N is the number of elements "
         "inside the collection.",
         tips="nondeterministic_output",
         summary="Iterates over the fields (and values) of a hash with a cursor.")
def hscan(c: Client, argv: list[bytes]) -> Any:
    cursor = parse_cursor(argv[2])
    h = lookup_hash(c, argv[1])
    if h is None:
        return [b"0", []]
    options = parse_scan_options(argv, 3, "hash")
    if h.hashtable:
        order = h.scan_order
        if order is None or at_start(cursor, len(h)):
            order = h.scan_order = hash_order(h.field_names())
        cursor, fields = bucket_page(order, cursor, len(h), options.count, h.__contains__)
        now = fields_now(c)  # fields past their deadline are skipped
        pairs = [(f, v) for f in fields if (v := h.get_live(f, now)) is not None]
    else:
        cursor, pairs = 0, h.items()  # a listpack is answered in one go
    matches = options.matches
    if matches is not None:
        pairs = [(f, v) for f, v in pairs if matches(f)]
    if options.novalues:
        return [b"%d" % cursor, [f for f, _ in pairs]]
    return [b"%d" % cursor, [x for pair in pairs for x in pair]]


# --- field expiry: shared parsing ----------------------------------------------------------


def invalid_expire(name: str) -> ReplyError:
    return ReplyError(f"ERR invalid expire time in '{name}' command")


def expire_argument(raw: bytes, base: int, unit: int, name: str) -> int:
    """convertExpireArgumentToUnixTime: a non-negative count of `unit` after `base`
    (0 for absolute times) -> unix ms, refusing what overflows."""
    value = parse_int(raw)
    if value < 0 or (unit == SECONDS and value > LLONG_MAX // 1000):
        raise invalid_expire(name)
    value *= unit
    if value > LLONG_MAX - base:
        raise invalid_expire(name)
    return value + base


def find_fields_token(argv: list[bytes], start: int) -> int:
    """Index of the first FIELDS argument from `start`, not the last one; 0 if none."""
    for i in range(start, len(argv) - 1):
        if argv[i].lower() == b"fields":
            return i
    return 0


def fixed_fields(argv: list[bytes], mismatch: ReplyError) -> list[bytes]:
    """`key FIELDS numfields field...` at argv[2] (HTTL, HPERSIST, HGETDEL, ...)."""
    if argv[2].lower() != b"fields":
        raise SYNTAX
    numfields = parse_int(argv[3])
    if numfields <= 0 or numfields != len(argv) - 4:
        raise mismatch
    return argv[4:]


# --- HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT ----------------------------------------------

_EXPIRE_CONDITIONS = (b"NX", b"XX", b"GT", b"LT")


def parse_expire_conditions(options: list[bytes]) -> frozenset[bytes]:
    """parseExtendedExpireArgumentsOrReply: NX/XX/GT/LT, repeats allowed."""
    flags = set()
    for option in options:
        flag = option.upper()
        if flag not in _EXPIRE_CONDITIONS:
            raise ReplyError(b"ERR Unsupported option " + option)
        flags.add(flag)
    if b"NX" in flags and len(flags) > 1:
        raise NX_CONFLICT
    if b"GT" in flags and b"LT" in flags:
        raise GT_LT_CONFLICT
    return frozenset(flags)


def hexpire_generic(c: Client, argv: list[bytes], name: str, unit: int, relative: bool) -> Any:
    at = find_fields_token(argv, 3)
    flags = parse_expire_conditions(argv[3:at]) if at else frozenset()
    numfields = parse_int(argv[at + 1]) if at else 0
    fields = argv[at + 2 :] if at else []
    if numfields <= 0 or numfields != len(fields):
        raise NUMFIELDS
    now = c.state.now
    when = expire_argument(argv[2], now if relative else 0, unit, name)
    key = argv[1]
    h = lookup_hash(c, key)
    results = [apply_expiry(h, field, when, flags, fields_now(c)) for field in fields]
    if h is None:  # no key: every field answers NO_FIELD, nothing is written
        return results
    if SET_OK in results:  # the server's cron expires its fields from now on
        c.db.track_field_ttls(key)
    if DELETED_NOW in results:
        count_expired_fields(c.state, results.count(DELETED_NOW))
        store(c, key, h, False, "hexpired")
    elif SET_OK in results:
        store(c, key, h, False, "hexpire")
    return results


def apply_expiry(h: HashValue | None, field: bytes, when: int, flags: frozenset[bytes],
                 now: int) -> int:
    """hashTypeSetExpire: one field's answer (-2, 0, 1 or 2), applying it; `now` is the
    time deadlines are judged at (`fields_now`: a replica gives its primary's past
    deadlines as they come, and waits for the HDEL)."""
    if h is None or not h.has_live(field, now):
        return NO_FIELD
    current = h.ttl_of(field)
    if flags and (
        (b"NX" in flags and current is not None)
        or (b"XX" in flags and current is None)
        or (b"GT" in flags and (current is None or when <= current))
        or (b"LT" in flags and current is not None and when >= current)
    ):
        return CONDITION_FAILED
    if when <= now:
        h.delete(field)
        return DELETED_NOW
    h.set_ttl(field, when)
    return SET_OK


def _expire_command(name: str, unit: int, relative: bool, what: str) -> None:
    @command(name, -6, "write fast", keys=keys_range(1, flags="RW update"), acl="hash",
             group=G, since="9.0.0",
             complexity="O(N) where N is the number of specified fields.",
             summary=f"Gives hash fields a deadline ({what}), with NX/XX/GT/LT conditions; "
             "answers per field.")
    def handler(c: Client, argv: list[bytes]) -> Any:
        return hexpire_generic(c, argv, name, unit, relative)


_expire_command("hexpire", SECONDS, True, "a time to live in seconds")
_expire_command("hpexpire", MS, True, "a time to live in milliseconds")
_expire_command("hexpireat", SECONDS, False, "a unix time in seconds")
_expire_command("hpexpireat", MS, False, "a unix time in milliseconds")


# --- HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME ------------------------------------------------


def httl_generic(c: Client, argv: list[bytes], unit: int, relative: bool) -> Any:
    fields = fixed_fields(argv, SYNTAX)
    h = lookup_hash(c, argv[1])
    now, seen = c.state.now, fields_now(c)
    base = now if relative else 0
    results = []
    for field in fields:
        if h is None or not h.has_live(field, seen):
            results.append(NO_FIELD)
            continue
        deadline = h.ttl_of(field)
        if deadline is None:
            results.append(NOT_SET)
            continue
        left = max(deadline - base, 0)
        results.append(left if unit == MS else (left + 500) // 1000)
    return results


def _ttl_command(name: str, unit: int, relative: bool, summary: str) -> None:
    @command(name, -5, "readonly fast", keys=keys_range(1, flags="RO access"), acl="hash",
             group=G, since="9.0.0",
             complexity="O(N) where N is the number of specified fields.", summary=summary)
    def handler(c: Client, argv: list[bytes]) -> Any:
        return httl_generic(c, argv, unit, relative)


_ttl_command("httl", SECONDS, True, "Answers the seconds left to live of hash fields.")
_ttl_command("hpttl", MS, True, "Answers the milliseconds left to live of hash fields.")
_ttl_command("hexpiretime", SECONDS, False,
             "Answers the unix time in seconds at which hash fields expire.")
_ttl_command("hpexpiretime", MS, False,
             "Answers the unix time in milliseconds at which hash fields expire.")


# --- HPERSIST, HGETDEL ---------------------------------------------------------------------


@command("hpersist", -5, "write fast", keys=keys_range(1, flags="RW update"), acl="hash",
         group=G, since="9.0.0", complexity="O(N) where N is the number of specified fields.",
         summary="Removes the deadline of hash fields; answers per field.")
def hpersist(c: Client, argv: list[bytes]) -> Any:
    fields = fixed_fields(argv, NUMFIELDS)
    key = argv[1]
    h = lookup_hash(c, key)
    if h is None:
        return [NO_FIELD] * len(fields)
    now = fields_now(c)
    results = [
        NO_FIELD if not h.has_live(field, now) else SET_OK if h.persist(field) else NOT_SET
        for field in fields
    ]
    if SET_OK in results:
        store(c, key, h, False, "hpersist")
    return results


@command("hgetdel", -5, "write fast", keys=keys_range(1, flags="RW access delete"), acl="hash",
         group=G, since="9.1.0",
         complexity="O(N) where N is the number of fields to be retrieved and deleted.",
         summary="Reads fields of a hash and deletes them, and the hash once empty.")
def hgetdel(c: Client, argv: list[bytes]) -> Any:
    fields = fixed_fields(argv, NUMFIELDS)
    key = argv[1]
    h = lookup_hash(c, key)
    if h is None:
        return [None] * len(fields)
    values = []
    now = fields_now(c)
    for field in fields:
        value = h.get_live(field, now)
        values.append(value)
        if value is not None:
            h.delete(field)
    if any(v is not None for v in values):
        store(c, key, h, False, "hdel")
    return values


# --- HGETEX, HSETEX ------------------------------------------------------------------------

_UNITS = {b"EX": (SECONDS, True), b"PX": (MS, True), b"EXAT": (SECONDS, False),
          b"PXAT": (MS, False)}


class ExpiryOptions:
    """The options before FIELDS of HGETEX/HSETEX (parseExtendedCommandArguments)."""

    __slots__ = ("flags", "unit", "raw_time")

    def __init__(self) -> None:
        self.flags: set[bytes] = set()  # NX XX FNX FXX KEEPTTL PERSIST
        self.unit: bytes | None = None  # EX PX EXAT PXAT
        self.raw_time = b""

    def deadline(self, c: Client, name: str) -> int:
        """The unix ms the time option designates (call only when a unit was given)."""
        unit, relative = _UNITS[self.unit or b""]
        return expire_argument(self.raw_time, c.state.now if relative else 0, unit, name)


# option -> the options it cannot be combined with
_HSETEX_FLAGS = {b"NX": {b"XX"}, b"XX": {b"NX"}, b"FNX": {b"FXX"}, b"FXX": {b"FNX"},
                 b"KEEPTTL": {b"EX", b"PX", b"EXAT", b"PXAT"}}
_HGETEX_FLAGS = {b"PERSIST": {b"EX", b"PX", b"EXAT", b"PXAT"}}


def parse_expiry_options(options: list[bytes], allowed: dict[bytes, set[bytes]],
                         time_blocker: bytes) -> ExpiryOptions:
    """Flags of `allowed` and one time unit (repeatable; the last value wins)."""
    parsed = ExpiryOptions()
    i = 0
    while i < len(options):
        option = options[i].upper()
        if option in allowed and not (allowed[option] & parsed.flags) and not (
            parsed.unit and parsed.unit in allowed[option]
        ):
            parsed.flags.add(option)
            i += 1
        elif option in _UNITS and i + 1 < len(options) and parsed.unit in (None, option) and (
            time_blocker not in parsed.flags
        ):
            parsed.unit, parsed.raw_time = option, options[i + 1]
            i += 2
        else:
            raise SYNTAX
    return parsed


def split_expiry_command(argv: list[bytes], allowed: dict[bytes, set[bytes]],
                         time_blocker: bytes) -> tuple[ExpiryOptions, int, list[bytes]]:
    """`key [options] FIELDS numfields ...`: the options, numfields and what follows.
    Like Valkey, the first FIELDS counted from the key on ends the options."""
    at = find_fields_token(argv, 1)
    if not at:
        return ExpiryOptions(), 0, []
    options = parse_expiry_options(argv[2:at], allowed, time_blocker)
    return options, parse_int(argv[at + 1]), argv[at + 2 :]


@command("hgetex", -5, "write fast", keys=keys_range(1, flags="RW access update"), acl="hash",
         group=G, since="9.0.0", complexity="O(N) where N is the number of specified fields.",
         summary="Reads fields of a hash and optionally sets or removes their deadline.")
def hgetex(c: Client, argv: list[bytes]) -> Any:
    options, numfields, fields = split_expiry_command(argv, _HGETEX_FLAGS, b"PERSIST")
    if numfields <= 0 or numfields != len(fields):
        raise NUMFIELDS
    key = argv[1]
    h = lookup_hash(c, key)
    persist = b"PERSIST" in options.flags
    when = options.deadline(c, "hgetex") if options.unit else None
    if h is None:
        return [None] * len(fields)
    now, seen = c.state.now, fields_now(c)
    expired_now = when is not None and when <= now
    values, changed = [], 0
    for field in fields:
        value = h.get_live(field, seen)
        values.append(value)
        if value is None:  # absent or past its deadline: left as it is
            continue
        if expired_now:
            changed += h.delete(field)
        elif when is not None:
            changed += apply_expiry(h, field, when, frozenset(), seen) == SET_OK
        elif persist:
            changed += h.persist(field)
    if changed and expired_now:
        count_expired_fields(c.state, changed)
    elif changed and when is not None:
        c.db.track_field_ttls(key)
    if changed:
        event = "hexpired" if expired_now else "hexpire" if when is not None else "hpersist"
        store(c, key, h, False, event)
    return values


@command("hsetex", -6, "write denyoom fast", keys=keys_range(1, flags="RW insert"), acl="hash",
         group=G, since="9.0.0", complexity="O(N) where N is the number of specified fields.",
         summary="Sets fields of a hash with a deadline or keeping theirs, under key (NX/XX) "
         "and field (FNX/FXX) conditions; answers 1 if done, 0 if not.")
def hsetex(c: Client, argv: list[bytes]) -> Any:
    options, numfields, pairs = split_expiry_command(argv, _HSETEX_FLAGS, b"KEEPTTL")
    if numfields <= 0 or numfields > LLONG_MAX // 2 or numfields * 2 != len(pairs):
        raise NUMFIELDS
    key = argv[1]
    h = lookup_hash(c, key)
    flags = options.flags
    if (b"NX" in flags and h is not None) or (b"XX" in flags and h is None):
        return 0
    when = options.deadline(c, "hsetex") if options.unit else None
    if not fields_condition_holds(h, pairs[::2], flags, fields_now(c)):
        return 0
    is_new = h is None
    if h is None:
        h = HashValue()
    events = ["hset"]
    if when is not None:
        events.append("hexpire")
    if when is not None and when <= c.state.now:
        for field in pairs[::2]:
            h.delete(field)
        count_expired_fields(c.state, numfields)  # Valkey counts every field named
        events.append("hexpired")
    else:
        expire_before_write(c, key, h, pairs[::2], propagate=b"KEEPTTL" in flags)
        set_fields(c, h, pairs, keep_ttl=b"KEEPTTL" in flags)
        if when is not None:
            for field in pairs[::2]:
                h.set_ttl(field, when)
                c.db.track_field_ttls(key)
    store(c, key, h, is_new, *events)
    return 1


def fields_condition_holds(h: HashValue | None, fields: list[bytes], flags: set[bytes],
                           now: int) -> bool:
    """FNX: none of the fields exists; FXX: all of them do (past its deadline, a field
    does not)."""
    if b"FNX" in flags:
        return h is None or not any(h.has_live(f, now) for f in fields)
    if b"FXX" in flags:
        return h is not None and all(h.has_live(f, now) for f in fields)
    return True
