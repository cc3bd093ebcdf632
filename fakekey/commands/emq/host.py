"""The host operations the EMQ verbs are built from.

The module the verbs emulate calls Valkey's own commands (HSET, ZADD, ...) for every read
and write. These helpers do the same on fakekey's keyspace, each exactly as its built-in
does it: the same encodings, the same keyspace events, through the same write funnel
(WATCH, readiness, notifications, empty containers deleted). A verb reads and checks
everything first, then writes with these; a read of the wrong type raises WRONGTYPE, an
inconsistent value raises EMQHOST, both before the first write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from fakekey.commands.args import LLONG_MAX, try_int
from fakekey.commands.emq.layout import HOST
from fakekey.commands.hashes import lookup_hash, set_fields, store, write_counter
from fakekey.commands.streams import (
    ID_EXHAUSTED,
    TOO_LARGE,
    TrimArgs,
    append_entry,
    default_trim_limit,
    generate_id,
)
from fakekey.resp.replies import ReplyError
from fakekey.types.hash import HashValue
from fakekey.types.stream import (
    LISTPACK_MAX_SIZE,
    MAX_ID,
    MIN_ID,
    StreamID,
    StreamValue,
    format_id,
    next_id,
)
from fakekey.types.zset import ZLimits, ZSet

if TYPE_CHECKING:
    from fakekey.commands.emq.layout import Call

T = TypeVar("T")


# --- reads ---------------------------------------------------------------------------------


def read_hash(call: Call, key: bytes) -> HashValue | None:
    """The hash at `key` (None if absent); WRONGTYPE for another type."""
    return lookup_hash(call.c, key)


def read_zset(call: Call, key: bytes) -> ZSet | None:
    """The sorted set at `key` (None if absent); WRONGTYPE for another type."""
    return call.db.lookup_type(key, ZSet)


def int_field(h: HashValue | None, field: bytes, default: int = 0) -> int:
    """An integer field (`default` when absent); EMQHOST when it holds anything else."""
    raw = None if h is None else h.get(field)
    if raw is None:
        return default
    value = try_int(raw)
    if value is None:
        raise HOST
    return value


def due_members(zs: ZSet | None, now: int, limit: int) -> list[bytes]:
    """At most `limit` members scored <= now, lowest first (ZRANGE BYSCORE -inf now
    LIMIT 0 limit): one search for the first member past `now`, then one cut, O(log N + M)
    for M members taken, however large `limit` is."""
    if zs is None:
        return []
    stop = min(limit, zs.keys.first_true(lambda key: key[0] > now))
    return [member for _, member in zs.keys.slice(0, stop)]


def swept_rows(call: Call, due: list[bytes], lane_refusal: Callable[[bytes], ReplyError],
               view: Callable[[HashValue], T]) -> list[T | None]:
    """`view` of the row of each member a sweep took (None: it has no row), member by
    member in score order: each row is checked for write access before it is read (the
    sweep writes every row it finds), and a lane row refuses the whole call with
    `lane_refusal(job id)`; all before anything is written."""
    out: list[T | None] = []
    for job_id in due:
        row_key = call.key(job_id)
        call.may_write(row_key)
        row = read_hash(call, row_key)
        if row is None:
            out.append(None)
            continue
        if is_lane_row(row):
            raise lane_refusal(job_id)
        out.append(view(row))
    return out


def head_member(zs: ZSet | None) -> bytes | None:
    """The member ZPOPMIN would pop (ZRANGE key 0 0)."""
    if not zs:
        return None
    return zs.keys.at(0)[1]


def in_zset(zs: ZSet | None, member: bytes) -> bool:
    return zs is not None and zs.score(member) is not None


# --- writes --------------------------------------------------------------------------------


def hset(call: Call, key: bytes, *pairs: bytes) -> None:
    """HSET key field value [field value ...]."""
    c = call.c
    h = lookup_hash(c, key)
    is_new = h is None
    if h is None:
        h = HashValue()
    args = list(pairs)
    h.convert_for_write(args, c.state.config["hash-max-listpack-entries"],
                        c.state.config["hash-max-listpack-value"])
    set_fields(c, h, args)
    store(c, key, h, is_new, "hset")


def hdel(call: Call, key: bytes, *fields: bytes) -> int:
    """HDEL key field [field ...]: the hash goes when emptied."""
    c = call.c
    h = lookup_hash(c, key)
    if h is None:
        return 0
    deleted = sum(h.delete(field) for field in fields)
    if deleted:
        store(c, key, h, False, "hdel")
    return deleted


def hincrby(call: Call, key: bytes, field: bytes, by: int) -> int:
    """HINCRBY key field by, on a field the caller has read as an integer."""
    c = call.c
    h = lookup_hash(c, key)
    value = int_field(h, field) + by
    write_counter(c, key, h, field, b"%d" % value, "hincrby")
    return value


def zadd(call: Call, key: bytes, member: bytes, score: int) -> None:
    """ZADD key score member."""
    db = call.db
    zs = db.lookup_type(key, ZSet)
    limits = ZLimits.of(call.c.state)
    if zs is None:
        zs = ZSet.create(1, len(member), limits)
        zs.insert(member, float(score), limits)
        db.set_value(key, zs, event="zadd", klass="z")
        return
    current = zs.score(member)
    if current is None:
        zs.insert(member, float(score), limits)
    elif current != score:
        zs.update(member, float(score))
    else:
        return  # the same score: ZADD changes nothing and announces nothing
    db.written(key, "zadd", "z")


def zrem(call: Call, key: bytes, member: bytes) -> bool:
    """ZREM key member: the set goes when emptied."""
    db = call.db
    zs = db.lookup_type(key, ZSet)
    if zs is None or not zs.remove(member):
        return False
    db.written(key, "zrem", "z")
    return True


def delete(call: Call, key: bytes) -> bool:
    """DEL key."""
    return call.db.delete(key)


# --- the bus: streams and failure counters ---------------------------------------------------


def read_stream(call: Call, key: bytes) -> StreamValue | None:
    """The stream at `key` (None if absent); WRONGTYPE for another type."""
    return call.db.lookup_type(key, StreamValue)


def approx_maxlen(call: Call, maxlen: int) -> TrimArgs:
    """XADD's options for `MAXLEN ~ maxlen` (no trimming at all when maxlen is 0)."""
    args = TrimArgs()
    if maxlen:
        args.maxlen = maxlen
        args.approx = True
        args.limit = default_trim_limit(call.c)
    return args


def check_appendable(call: Call, s: StreamValue | None, batch: list[tuple[bytes, ...]]) -> None:
    """Raise the error XADD * would answer for some entry of `batch` appended in order
    (the stream's ids exhausted, an entry too large), before any of them is written."""
    last: StreamID = MIN_ID if s is None else s.last_id
    for pairs in batch:
        if last == MAX_ID:
            raise ID_EXHAUSTED
        if sum(map(len, pairs)) > LISTPACK_MAX_SIZE:
            raise TOO_LARGE
        last = (call.now, 0) if call.now > last[0] else next_id(last)


def xadd(call: Call, key: bytes, pairs: tuple[bytes, ...], trim: TrimArgs) -> bytes:
    """XADD key [MAXLEN ~ n] * field value ..., on an entry `check_appendable` passed."""
    s = read_stream(call, key)
    created = s is None
    if s is None:
        s = StreamValue()
    sid = generate_id(s, trim, call.now)
    append_entry(call.c, key, s, created, sid, pairs, trim)
    return format_id(sid)


def read_counter(call: Call, key: bytes) -> int:
    """The integer string at `key` (0 if absent); WRONGTYPE for another type, EMQHOST for
    a string that is not an integer."""
    raw = call.db.lookup_string(key)
    if raw is None:
        return 0
    value = try_int(bytes(raw))
    if value is None:
        raise HOST
    return value


def incr(call: Call, key: bytes, current: int) -> int:
    """INCR key, on a counter the caller has read as `current` (EMQHOST where INCR would
    overflow, checked before the write)."""
    value = current + 1
    if value > LLONG_MAX:
        raise HOST
    call.db.set_value(key, b"%d" % value, keep_ttl=True, event="incrby", klass="$")
    return value


def pexpire(call: Call, key: bytes, ttl_ms: int) -> None:
    """PEXPIRE key ttl_ms on an existing key, for a positive ttl the caller has checked
    with `expire_fits`."""
    call.db.set_expire(key, call.now + ttl_ms)
    call.db.written(key, "expire", "g")


def expire_fits(call: Call, ttl_ms: int) -> bool:
    """Whether PEXPIRE accepts `ttl_ms` now (its deadline must fit in a signed 64 bits)."""
    return ttl_ms <= LLONG_MAX - call.now


# --- job rows (the flat verbs) ---------------------------------------------------------------


def exists(call: Call, key: bytes) -> bool:
    """EXISTS key: a key of any type counts."""
    return call.db.lookup(key) is not None


def is_lane_row(row: HashValue) -> bool:
    """A lane row carries its group; a flat row has none."""
    return b"group" in row


def fence_matches(row: HashValue, fence: int) -> bool:
    """The row's fence equals the caller's, compared as integers; a missing or
    non-integer fence is stale."""
    raw = row.get(b"fence")
    return raw is not None and try_int(raw) == fence


def max_attempts(row: HashValue, meta: HashValue | None) -> int:
    """A job's max attempts: the row's, else the queue's (meta), else 3. Both fields are
    read and must be integers when present (EMQHOST), as the twin script reads them."""
    own = int_field(row, b"max_attempts", default=0) if b"max_attempts" in row else None
    queue = int_field(meta, b"max_attempts", default=3)
    return queue if own is None else own
