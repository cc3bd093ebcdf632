"""Hash fields past their own deadline (HEXPIRE & co.): hidden from commands at once
(fakekey/commands/hashes.py) but deleted, as Valkey, which has no lazy expiry of fields,
only by the server's active expiry (`expire_fields_some`, fakekey/core/expiry.py, after
the keys' own, a bounded number per step), or when fakekey's clock is moved by hand
(`expire_all_fields`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakekey.types.hash import HashValue

# the most fields one hash loses in one step of active expiry: a hash with a million due
# fields is emptied over several steps, not in one
FIELDS_PER_HASH = 1000

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState


def reclaim_fields(db: Database, key: bytes, h: HashValue, now: int, limit: int = 0) -> int:
    """Delete the fields of `h` due at `now` (at most `limit`, if given), as Valkey's
    active expiry does (hexpired, then del if the hash is left empty). Returns how many
    went. A replica deletes none: its primary's HDEL does."""
    if db.state.upstream is not None:
        return 0
    due = h.expire_fields(now, limit)
    if due:
        state = db.state
        count_expired_fields(state, len(due))
        dirty = state.dirty
        db.written(key, "hexpired", "h")  # the funnel deletes an emptied hash (del)
        if state.feed is not None:  # replicas and the AOF learn it as Valkey sends it: HDEL
            state.feed.fields_expired(db.index, key, due, state.dirty - dirty, key not in db.data)
    return len(due)


def expire_overwritten(db: Database, key: bytes, h: HashValue, fields: list[bytes], now: int,
                       propagate: bool) -> None:
    """A write about to set fields past their deadline expires them first, as Valkey's
    does: deleted and counted, `hexpired` announced before the write's own events. The
    hash stays even if that empties it: the write refills it (no `del`/`new`, and its
    encoding stays). Their HDEL goes to replicas before the write only when asked
    (`propagate`: HSETEX KEEPTTL, which the replica would apply keeping the old
    deadline); the other writes go out in a form the replica applies as is."""
    due = [field for field in dict.fromkeys(fields) if h.expired(field, now)]
    if not due:
        return
    for field in due:
        h.delete(field)
    state = db.state
    count_expired_fields(state, len(due))
    if state.notify_flags:
        state.notify(db, "h", "hexpired", key)
    if propagate and state.feed is not None:
        state.feed.fields_expired(db.index, key, due, 0, False)


def count_expired_fields(state: ServerState, count: int) -> None:
    """INFO's expired_fields: fields removed by expiry, or by a deadline already past."""
    state.stats["expired_fields"] += count


def expire_fields_some(db: Database, now: int, count: int) -> tuple[int, int]:
    """Active expiry's step for fields: look at up to `count` hashes with field TTLs, the
    next ones round the walk, and delete a bounded number of due fields from each. Returns
    (hashes looked at, fields deleted). A key no longer holding a hash with field TTLs
    leaves the set; a key past its own deadline is left to the keys' expiry."""
    keys = db.field_ttl_keys
    deleted = 0
    looked = db.sampled_field_ttls.walk(keys, count)
    for key in looked:
        h = db.data.get(key)
        if type(h) is not HashValue or not h.ttls:
            keys.discard(key)
            continue
        if db.expires.get(key, now) >= now:
            deleted += reclaim_fields(db, key, h, now, FIELDS_PER_HASH)
    return len(looked), deleted


def expire_all_fields(db: Database, now: int) -> int:
    """Every due field of every hash (the clock was moved by hand): the number deleted."""
    deleted = 0
    for key in list(db.field_ttl_keys):
        h = db.data.get(key)
        if type(h) is not HashValue or not h.ttls:
            db.field_ttl_keys.discard(key)
        elif db.expires.get(key, now) >= now:
            deleted += reclaim_fields(db, key, h, now)
    return deleted


def keys_with_volatile_items(db: Database) -> int:
    """INFO keyspace's keys_with_volatile_items: the hashes holding a field with a
    deadline (past or not)."""
    data = db.data
    count = 0
    for key in db.field_ttl_keys:
        h = data.get(key)
        count += type(h) is HashValue and h.has_ttls()
    return count
