"""Hash fields past their own deadline (HEXPIRE & co.): reclaimed when a command touches
their hash, and by the server's active expiry (`expire_fields_some`, fakekey/core/expiry.py)
after the keys' own."""

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
