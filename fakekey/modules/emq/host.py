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
from fakekey.commands.streams import (
    ID_EXHAUSTED,
    TOO_LARGE,
    TrimArgs,
    append_entry,
    default_trim_limit,
    generate_id,
)
from fakekey.core.field_expiry import reclaim_fields
from fakekey.modules.emq.layout import HOST, word_int
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
    from fakekey.modules.emq.layout import Call

T = TypeVar("T")


# --- reads ---------------------------------------------------------------------------------


def read_hash(call: Call, key: bytes) -> HashValue | None:
    """The hash at `key` (None if absent), its due fields gone; WRONGTYPE for another
    type."""
    db = call.db
    h = db.lookup_type(key, HashValue)
    if h is not None and h.ttls and reclaim_fields(db, key, h, call.now):
        return db.data.get(key)
    return h


def read_zset(call: Call, key: bytes) -> ZSet | None:
    """The sorted set at `key` (None if absent); WRONGTYPE for another type."""
    return call.db.lookup_type(key, ZSet)


def int_field(h: HashValue | None, field: bytes, default: int = 0) -> int:
    """An integer field (`default` when absent); EMQHOST when it holds anything else."""
    if h is None:
        return default
    raw = h.get(field)
    if raw is None:
        return default
    value = word_int(raw)
    if value is None:
        raise HOST
    return value


def due_members(zs: ZSet | None, now: int, limit: int) -> list[bytes]:
    """At most `limit` members scored <= now, lowest first (ZRANGE BYSCORE -inf now
    LIMIT 0 limit): one search for the first member past `now`, then one cut, O(log N + M)
    for M members taken, however large `limit` is."""
    if zs is None:
        return []
    keys = zs.sorted_keys()
    stop = min(limit, keys.first_true(lambda key: key[0] > now))
    return [member for _, member in keys.slice(0, stop)]


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
    if zs is None or not zs:
        return None
    return zs.pairs(0, 1)[0][0]


def in_zset(zs: ZSet | None, member: bytes) -> bool:
    return zs is not None and member in zs


# --- writes --------------------------------------------------------------------------------
#
# Each write takes the value the verb's checks read at `key` (None when absent) instead of
# looking the key up again: within one call the clock does not move, so a value read stays
# the live one until a write replaces or empties it. A container the funnel deleted because
# a write emptied it is empty: the writes take an empty value for an absent key.


def hset(call: Call, key: bytes, h: HashValue | None, *pairs: bytes) -> HashValue:
    """HSET key field value [field value ...] on `h`, the hash read at `key`; answers the
    hash stored. The encoding converts as HSET's would: the pairs too many or an argument
    too long (before), or the hash grown past the entry limit (after)."""
    created = h is None or not h
    if h is None or created:
        h = HashValue()
    for at in range(0, len(pairs), 2):
        h.set(pairs[at], pairs[at + 1])
    if not h.hashtable:
        settings = call.settings
        entries = settings["hash-max-listpack-entries"]
        if (len(h) > entries or len(pairs) // 2 > entries
                or max(map(len, pairs)) > settings["hash-max-listpack-value"]):
            h.to_hashtable()
    if created:
        call.db.set_value(key, h, event="hset", klass="h")
    else:
        call.db.written(key, "hset", "h")
    return h


def hdel(call: Call, key: bytes, h: HashValue | None, *fields: bytes) -> int:
    """HDEL key field [field ...] on `h`, the hash read at `key`: the hash goes when
    emptied."""
    if h is None:
        return 0
    deleted = 0
    for field in fields:
        deleted += h.delete(field)
    if deleted:
        call.db.written(key, "hdel", "h")
    return deleted


def hincrby(call: Call, key: bytes, h: HashValue | None, field: bytes, by: int) -> int:
    """HINCRBY key field by on `h`, the hash read at `key`, whose field the caller has
    checked is an integer. A hash it creates is read again by a caller that writes it
    once more."""
    return write_counter(call, key, h, field, int_field(h, field) + by)


def write_counter(call: Call, key: bytes, h: HashValue | None, field: bytes, value: int) -> int:
    """HINCRBY's write, for a caller that read the field (`int_field`) and added to it:
    the field holds `value` and keeps its TTL."""
    raw = b"%d" % value
    created = h is None or not h
    if h is None or created:
        h = HashValue()
    h.set(field, raw, True)
    if not h.hashtable:
        settings = call.settings
        h.convert_after_set(field, raw, settings["hash-max-listpack-entries"],
                            settings["hash-max-listpack-value"])
    if created:
        call.db.set_value(key, h, event="hincrby", klass="h")
    else:
        call.db.written(key, "hincrby", "h")
    return value


def zset_limits(call: Call) -> ZLimits:
    """zset-max-listpack-entries and -value, as CONFIG has them now."""
    return call.c.state.config.zset_limits()


def zadd(call: Call, key: bytes, zs: ZSet | None, member: bytes, score: int) -> ZSet:
    """ZADD key score member on `zs`, the sorted set read at `key`; answers the set stored."""
    limits = zset_limits(call)
    if zs is None or not zs:
        zs = ZSet.create(1, len(member), limits)
        zs.insert(member, float(score), limits)
        call.db.set_value(key, zs, event="zadd", klass="z")
        return zs
    current = zs.score(member)
    if current is None:
        zs.insert(member, float(score), limits)
    elif current != score:
        zs.update(member, float(score))
    else:
        return zs  # the same score: ZADD changes nothing and announces nothing
    call.db.written(key, "zadd", "z")
    return zs


def zrem(call: Call, key: bytes, zs: ZSet | None, member: bytes) -> bool:
    """ZREM key member on `zs`, the sorted set read at `key`: the set goes when emptied."""
    if zs is None or not zs.remove(member):
        return False
    call.db.written(key, "zrem", "z")
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
        following = (call.now, 0) if call.now > last[0] else next_id(last)
        assert following is not None  # `last` is below MAX_ID here
        last = following


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
    return raw is not None and word_int(raw) == fence


def max_attempts(row: HashValue, meta: HashValue | None) -> int:
    """A job's max attempts: the row's, else the queue's (meta), else 3. Both fields are
    read and must be integers when present (EMQHOST), as the twin script reads them."""
    own = int_field(row, b"max_attempts", default=0) if b"max_attempts" in row else None
    queue = int_field(meta, b"max_attempts", default=3)
    return queue if own is None else own
