"""Hash fields past their own deadline (HEXPIRE & co.): reclaimed when a command touches
their hash, and by the server's cron (`expire_hash_fields`) after the keys' own expiry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakekey.types.hash import HashValue

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState


def reclaim_fields(db: Database, key: bytes, h: HashValue, now: int) -> int:
    """Delete the fields of `h` due at `now`, as Valkey's active expiry does (hexpired,
    then del if the hash is left empty). Returns how many went."""
    due = h.expire_fields(now)
    if due:
        count_expired_fields(db.state, len(due))
        db.written(key, "hexpired", "h")  # the funnel deletes an emptied hash (del)
    return len(due)


def count_expired_fields(state: ServerState, count: int) -> None:
    """INFO's expired_fields: fields removed by expiry, or by a deadline already past."""
    state.stats["expired_fields"] += count


def expire_hash_fields(db: Database, now: int) -> int:
    """Active expiry of hash fields in one database: the hook for the server's cron (and
    for a clock that moved), to run after the keys' own expiry. Returns the number of
    fields deleted."""
    if not db.state.volatile_hashes.any_left():
        return 0
    key_deadlines = db.expires
    volatile = [  # a key past its own deadline is left to the keys' expiry
        (key, value) for key, value in db.data.items()
        if type(value) is HashValue and value.ttls and key_deadlines.get(key, now) >= now
    ]
    return sum(reclaim_fields(db, key, h, now) for key, h in volatile)
