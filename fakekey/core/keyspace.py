"""Databases: keys, lazy and active expiry, and the one funnel every write goes through.

A string value is `bytes` (or `bytearray` once modified in place, Valkey's "raw"
encoding), or an `int` where INCR and its family left a counter (Valkey's "int"
encoding): the next INCR neither parses nor formats it. Every other reader sees a
counter's bytes: `lookup` and `peek` turn it into them (`counter_bytes`), and whatever
reads the table directly (persistence, digests, estimates) turns an int into its bytes
itself (`string_bytes`).
Every other type is an object from `fakekey.types` with a `TYPE_NAME`.

The write funnel (`written`, `deleted`, `set_value`) does, for every change to a key:
bump WATCH state, delete a container left empty, mark the key ready for blocked clients,
invalidate the key for client-side caches (`state.tracking`, fakekey/core/tracking.py) and
emit the keyspace notification. Handlers call the funnel; they never do these themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import fakekey.memory.lfu as lfu
from fakekey.codecs.errors import WRONGTYPE
from fakekey.core.access import AccessTimes
from fakekey.core.cluster import SlotIndex
from fakekey.core.sampled import SampledKeys
from fakekey.core.table import KeyHashes, Table
from fakekey.memory.lazyfree import lazy_setting, release
from fakekey.types.hash import HashValue

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

STRING_TYPES: Final = (bytes, bytearray)


def type_name(value: Any) -> str:
    if isinstance(value, STRING_TYPES) or type(value) is int:
        return "string"
    return value.TYPE_NAME


def string_bytes(value: Any) -> Any:
    """A stored value as the readers of the table see it: a counter (int) as its bytes,
    anything else as it is."""
    return b"%d" % value if type(value) is int else value


class Database:
    """One numbered database."""

    __slots__ = (
        "state", "index", "hashes", "data", "expires", "access", "watched", "waiting", "scan_order",
        "numbers_as_text", "lfu", "lfu_touched", "sampled_keys", "sampled_volatile",
        "field_ttl_keys", "sampled_field_ttls", "scan_added", "slot_index",
    )

    def __init__(self, state: ServerState, index: int) -> None:
        self.state = state
        self.index = index
        # the per-key tables grow a part at a time (fakekey/core/table.py)
        # one memo of the key last hashed, for all of them: a command hashes its key once
        self.hashes = KeyHashes()
        self.data = Table(self.hashes)  # key -> value
        self.expires = Table(self.hashes)  # key -> unix ms deadline
        # key -> ms of last access, to the second (OBJECT IDLETIME, LRU: core/access.py)
        self.access = AccessTimes(self.data)
        self.watched: dict[bytes, set[Client]] = {}  # WATCH
        self.waiting: dict[bytes, Any] = {}  # key -> FIFO of blocked clients
        self.scan_order: Any = None  # SCAN's key order, kept once scanned (commands/key_order.py)
        # ... and the keys added since it last looked (None: no order kept)
        self.scan_added: list[bytes] | None = None
        # strings that read as integers but are not stored as one (INCRBYFLOAT's result:
        # Valkey keeps it embstr): OBJECT ENCODING asks; any new value or removal forgets
        self.numbers_as_text: set[bytes] = set()
        # key -> Valkey's packed LFU counter (fakekey/memory/lfu.py), kept under an LFU policy
        self.lfu = Table(self.hashes)
        self.lfu_touched: tuple[bytes, int] | None = None  # (key, command) last counted
        # the keys, and the keys with a deadline, to draw from (RANDOMKEY) and walk (active
        # expiry) at O(1) a key: a dict has no random access (fakekey/core/sampled.py)
        self.sampled_keys = SampledKeys()
        self.sampled_volatile = SampledKeys()
        # keys whose hash has (or had) field TTLs: active expiry walks them (core/expiry.py)
        self.field_ttl_keys: set[bytes] = set()
        self.sampled_field_ttls = SampledKeys()
        # cluster mode: the keys of each hash slot (core/cluster.py)
        self.slot_index: SlotIndex | None = None

    # --- reads -------------------------------------------------------------------------

    def lookup(self, key: bytes) -> Any:
        """The live value of `key` or None; an expired key is deleted on the way."""
        value = self.lookup_counter(key)
        if type(value) is int:  # a counter: its readers see bytes
            return self.counter_bytes(key, value)
        return value

    def lookup_counter(self, key: bytes) -> Any:
        """`lookup` for INCR and its family: a counter comes back as the int it is."""
        data = self.data
        one = data.one  # a table still one dict (core/table.py): read without two calls
        value = one.get(key) if one is not None else data.get(key)
        if value is None or (self.expires and key in self.expires and self._expire_if_due(key)):
            state = self.state
            if state.counts_lookups:  # a read command's lookup (Valkey's lookupKeyRead)
                state.keyspace_misses += 1
            if state.notify_flags:
                state.notify_miss(self, key)
            return None
        state = self.state
        if state.counts_lookups:
            state.keyspace_hits += 1
        if state.touch_keys:
            self._stamp_access(key, state.now)
            if state.lfu_on:  # an LFU policy: the access counts (Valkey's updateLFU)
                self.lfu_access(key)
        return value

    def counter_bytes(self, key: bytes, value: int) -> bytes:
        """A counter read as a string: stored as its bytes from now on (a change of
        representation, not a write: Valkey's value is the same string)."""
        text = b"%d" % value
        self.data.replace(key, text)
        return text

    def lookup_write(self, key: bytes) -> Any:
        """`lookup` as Valkey's lookupKeyWrite: never counted in keyspace_hits/misses,
        even inside a command whose reads count (PFMERGE's destination)."""
        state = self.state
        counts, state.counts_lookups = state.counts_lookups, False
        try:
            return self.lookup(key)
        finally:
            state.counts_lookups = counts

    def count_read(self, found: bool) -> None:
        """A write command's read of a key (Valkey's lookupKeyRead: COPY's source, SET's
        GET) counted as a read command's lookup is."""
        if found:
            self.state.keyspace_hits += 1
        else:
            self.state.keyspace_misses += 1

    def lfu_access(self, key: bytes) -> None:
        """Valkey's updateLFU for one access to `key` (once per command and key)."""
        state = self.state
        self.lfu_touched = (key, state.commands_processed)
        self.lfu[key] = lfu.accessed(self.lfu.get(key) or lfu.fresh(state.now), state.now,
                                     state.config.values["lfu-decay-time"],
                                     state.config.values["lfu-log-factor"])

    def lookup_type(self, key: bytes, kind: type) -> Any:
        """The value if it is of `kind`, None if absent; WRONGTYPE otherwise."""
        value = self.lookup(key)
        if value is None or type(value) is kind:
            return value
        raise WRONGTYPE

    def lookup_string(self, key: bytes) -> bytes | bytearray | None:
        value = self.lookup(key)
        if value is None or type(value) is bytes or type(value) is bytearray:
            return value
        raise WRONGTYPE

    def exists(self, key: bytes) -> bool:
        found = key in self.data and not (
            self.expires and key in self.expires and self._expire_if_due(key)
        )
        state = self.state
        if state.counts_lookups:  # EXISTS, TYPE, TTL, OBJECT: Valkey's LOOKUP_NOTOUCH reads
            if found:
                state.keyspace_hits += 1
            else:
                state.keyspace_misses += 1
        if not found and state.notify_flags:
            state.notify_miss(self, key)
        return found

    def ttl_ms(self, key: bytes) -> int | None:
        return self.expires.get(key)

    # --- the write funnel ----------------------------------------------------------------

    def set_value(
        self,
        key: bytes,
        value: Any,
        *,
        keep_ttl: bool = False,
        event: str | None = None,
        klass: str = "g",
    ) -> None:
        """Store `value` at `key` (new or replacing), clearing its TTL unless kept."""
        state = self.state
        old = self.data.put(key, value)
        if state.lfu_on:
            # a new value starts at LFU_INIT_VAL; an overwrite keeps its counter, and counts
            # the access Valkey's setKey makes looking the key up (unless this command did)
            if old is None:
                self.lfu[key] = lfu.fresh(state.now)
            elif state.touch_keys and self.lfu_touched != (key, state.commands_processed):
                self.lfu_access(key)
        if old is None:
            if state.notify_flags:
                state.notify(self, "n", "new", key)
            self.sampled_keys.added(key, self.data)
            if self.slot_index is not None:
                self.slot_index.added(key)
            if self.scan_added is not None:
                self._scan_added(key)
        elif old is not value and type(old) is not bytes:  # a replaced value is freed
            release(state, old, lazy_setting(state, "server-del"))
        if type(value) is HashValue and value.ttls:  # RESTORE, COPY: its fields expire here
            self.track_field_ttls(key)
        if self.numbers_as_text:
            self.numbers_as_text.discard(key)
        if not keep_ttl and self.expires:
            self.expires.pop(key, None)
        # a new key's time follows from its place (core/access.py), unless eviction
        # will read it (maxmemory): a walk of the key's shard for each would be too slow
        if old is None and state.memory is None:
            access = self.access
            access.added(key, access.stamp(state.now))
        else:
            self._stamp_access(key, state.now)
        self.written_value(key, value, event, klass)

    def set_counter(self, key: bytes, value: Any) -> None:
        """INCR's write to the string it found at `key` (`lookup_counter` just read it
        in this command): `set_value` with its TTL kept, less what cannot apply to a
        string replacing a string (no new key, nothing to free, no field TTLs)."""
        state = self.state
        self.data.replace(key, value)
        if state.lfu_on and state.touch_keys and self.lfu_touched != (key, state.commands_processed):
            self.lfu_access(key)
        if self.numbers_as_text:
            self.numbers_as_text.discard(key)
        if not state.touch_keys:  # else the lookup stamped it, at this same `now`
            self._stamp_access(key, state.now)
        self.written_value(key, value, "incrby", "$")

    def _stamp_access(self, key: bytes, now: int) -> None:
        """`key` was accessed at `now` (ms). Its entry is written only when it changes:
        INCR's lookup stamps the key it then writes, and a key read or written again
        within the second already has its stamp (a read costs less than a write)."""
        access = self.access
        stamp = access.stamp(now)
        touched = access.touched
        one = touched.one  # as in lookup_counter
        if (one.get(key) if one is not None else touched.get(key)) is not stamp:
            touched[key] = stamp

    def _scan_added(self, key: bytes) -> None:
        """A new key, for SCAN's kept order; one never scanned again forgets the order
        once the keys added outnumber the keys (they would keep deleted keys alive)."""
        added = self.scan_added
        assert added is not None
        added.append(key)
        if len(added) > len(self.data) + 1024:
            self.scan_order = self.scan_added = None

    def track_field_ttls(self, key: bytes) -> None:
        """The hash at `key` has field TTLs: active expiry must look at it."""
        keys = self.field_ttl_keys
        if key not in keys:
            keys.add(key)
            self.sampled_field_ttls.added(key, keys)

    def written(self, key: bytes, event: str | None = None, klass: str = "g") -> None:
        """After any change to `key`'s value: WATCH, readiness, notification, empties.

        An emptied container is deleted, and announced as `del` after the command's own
        event, as Valkey does. Each change counts one in the dirty counter (INFO
        rdb_changes_since_last_save) except a new deadline: it belongs to the value
        written with it (SET EX), or its command counts it (EXPIRE: fakekey/core/dirty.py)."""
        self.written_value(key, self.data.get(key), event, klass)

    def written_value(self, key: bytes, value: Any, event: str | None, klass: str) -> None:
        """`written` by a caller that holds the key's value, as stored (None: not stored),
        so that the funnel need not read it again: set_value, a push onto a list."""
        state = self.state
        if event != "expire":
            state.dirty += 1
        if state.journal is not None:  # Valkey's form is being propagated (persistence/propagate.py)
            state.journal.append((self.index, key))
        # a string is never an empty container: its type alone settles it (a counter: 0)
        kind = type(value)
        emptied = (kind is not bytes and kind is not int and value is not None
                   and kind is not bytearray and not value)
        if emptied:
            self._remove(key)  # an emptied container does not exist
        if self.watched:
            self._touch_watchers(key)
        if self.waiting and key in self.waiting:
            if emptied:  # deleted: only waiters that care (XREADGROUP) wake, as dbDelete
                state.blocking.signal_deleted(self, key)
            elif key in self.data:
                state.blocking.signal(self, key)
        if state.wake_watch is not None:  # the lost-wake detector, armed (core/wakes.py)
            state.wake_watch.written(self, key, event)
        if state.tracking is not None:  # client-side caching: the readers' invalidation
            state.tracking.invalidate(key)
        if state.memory is not None:  # maxmemory: the key's new estimate (fakekey/memory/eviction.py)
            state.memory.changed(self, key)
        if state.notify_flags:
            if event is not None:
                state.notify(self, klass, event, key)
            if emptied:
                state.notify(self, "g", "del", key)

    def delete(self, key: bytes, event: str | None = "del", lazy: bool | None = None,
               by_server: bool = False) -> bool:
        """Remove a key. Its value is freed (lazily per `lazy`, by default per
        lazyfree-lazy-server-del) unless it lives on under another name (RENAME, MOVE).
        `by_server`: no client removed it (an eviction), for client-side caching."""
        value = self.data.get(key)
        if value is None:
            return False
        if self.expires and key in self.expires and self._expire_if_due(key):
            return False
        self._remove(key)
        if type(value) is not bytes and event not in ("rename_from", "move_from"):
            release(self.state, value, lazy_setting(self.state, "server-del") if lazy is None else lazy)
        self.state.dirty += 1
        if self.state.journal is not None:
            self.state.journal.append((self.index, key))
        if self.watched:
            self._touch_watchers(key)
        if self.waiting and key in self.waiting:
            self.state.blocking.signal_deleted(self, key)
        if self.state.tracking:
            self.state.tracking.invalidate(key, by_server)
        if event is not None and self.state.notify_flags:
            self.state.notify(self, "g", event, key)
        return True

    def set_expire(self, key: bytes, when_ms: int) -> None:
        expires = self.expires
        new = key not in expires
        expires[key] = when_ms  # a dirty change counted by its command (fakekey/core/dirty.py)
        if self.state.journal is not None:
            self.state.journal.append((self.index, key))
        if new:
            self.sampled_volatile.added(key, expires)
        if self.state.upstream is not None:  # a writable replica's own key: its cron expires it
            self.state.upstream.remember_own_expire(self.state, self.index, key)

    def load(self, key: bytes, value: Any, deadline: int, now: int) -> None:
        """A key read from a snapshot at startup: stored as it was, announced to nobody."""
        new = key not in self.data
        self.data[key] = value
        if new:
            self.sampled_keys.added(key, self.data)
            if self.slot_index is not None:
                self.slot_index.added(key)
            if self.scan_added is not None:
                self._scan_added(key)
        if type(value) is HashValue and value.ttls:
            self.track_field_ttls(key)
        access = self.access
        stamp = access.stamp(now)
        if new and self.state.memory is None:
            access.added(key, stamp)
        else:
            access.touched[key] = stamp
        if deadline >= 0:
            self.set_expire(key, deadline)

    def persist(self, key: bytes) -> bool:
        if self.expires.pop(key, None) is None:
            return False
        if self.state.journal is not None:
            self.state.journal.append((self.index, key))
        return True

    def _remove(self, key: bytes) -> None:
        self.access.removing(key)  # first: a run's mark passes to the key after it
        del self.data[key]
        if self.slot_index is not None:
            self.slot_index.removed(key)
        if self.state.memory is not None:
            self.state.memory.removed(self, key)
        if self.numbers_as_text:
            self.numbers_as_text.discard(key)
        if self.lfu:
            self.lfu.pop(key, None)
        if self.expires:
            self.expires.pop(key, None)
        if self.field_ttl_keys:
            self.field_ttl_keys.discard(key)

    def _touch_watchers(self, key: bytes) -> None:
        """A watched key changed: its watchers' EXEC will abort. A key that was already
        expired when watched and is now gone counts as unchanged (as Valkey)."""
        clients = self.watched.get(key)
        if not clients:
            return
        gone = key not in self.data
        for client in clients:
            entry = (self, key)
            if client.watching.get(entry) and gone:
                client.watching[entry] = False
                continue
            client.watch_dirty = True

    def touch_all_watchers(self, other: Database | None = None) -> None:
        """FLUSHDB/FLUSHALL/SWAPDB: watchers of keys that exist here (or in `other`, the
        database swapped in) are dirty; watched keys that exist nowhere are not. As Valkey's
        touchAllWatchedKeysInDb, a key expired when watched that is now deleted, or
        replaced by another expired one, is no logical change, and a missing key replaced
        by an expired one is watched as expired."""
        for key, clients in self.watched.items():
            here = key in self.data
            there = other is not None and key in other.data
            if not (here or there):
                continue
            for client in clients:
                entry = (self, key)
                if client.watching.get(entry):  # expired when WATCH ran
                    if not there:
                        client.watching[entry] = False
                        continue
                    if other is not None and other.is_expired(key):
                        continue
                elif not here and other is not None and other.is_expired(key):
                    client.watching[entry] = True
                    continue
                client.watch_dirty = True

    def is_expired(self, key: bytes) -> bool:
        """Logically expired (deadline passed) but not yet deleted."""
        when = self.expires.get(key)
        return when is not None and self.state.now > when and key in self.data

    # --- expiry --------------------------------------------------------------------------

    def _expire_if_due(self, key: bytes) -> bool:
        when = self.expires.get(key)
        if when is None or self.state.now <= when:
            return False
        upstream = self.state.upstream
        if upstream is not None:  # a replica: gone to its clients, deleted by the primary's DEL
            return upstream.hides_expired(self.state)
        if self.state.config["import-mode"]:  # kept until the import source deletes it
            client = self.state.current_client
            return client is None or not client.import_source  # which alone still sees it
        if self.state.paused is None:  # CLIENT PAUSE: expired, but kept until it ends
            self.expire_now(key)
        return True

    def expire_now(self, key: bytes) -> None:
        """Delete a key whose time has passed, as an expiry (not a DEL)."""
        value = self.data[key]
        self._remove(key)
        if type(value) is not bytes:
            release(self.state, value, lazy_setting(self.state, "expire"))
        self.state.stats["expired_keys"] += 1
        if self.state.feed is not None:  # replicas (and the log) learn it as a removal
            self.state.feed.expired(self.index, key)
        elif self.state.aof is not None:  # logged as a removal where it happened
            self.state.aof.expired(self.index, key)
        if self.watched:
            self._touch_watchers(key)
        if self.waiting and key in self.waiting:
            self.state.blocking.signal_deleted(self, key)
        if self.state.notify_flags:
            self.state.notify(self, "x", "expired", key)
        if self.state.tracking:  # after `expired`, as Valkey's deleteExpiredKeyAndPropagate
            self.state.tracking.invalidate(key, by_server=True)

    def expire_due(self, now: int) -> int:
        """Delete every key whose deadline passed (the clock was moved by hand)."""
        expires = self.expires
        due = [k for k, when in expires.items() if now > when] if expires else []
        for key in due:
            self.expire_now(key)
        return len(due)

    def expire_some(self, now: int, count: int) -> tuple[int, int]:
        """Active expiry's step: look at up to `count` keys with a deadline, the next ones
        round the walk, and delete those past it. Returns (looked at, deleted)."""
        expires = self.expires
        keys = self.sampled_volatile.walk(expires, count)
        expired = 0
        for key in keys:
            when = expires.get(key)
            if when is not None and now > when:  # a key met twice in one step is gone
                self.expire_now(key)
                expired += 1
        return len(keys), expired

    # --- whole database --------------------------------------------------------------------

    def flush(self, lazy: bool = False) -> None:
        """Drop every key; `lazy`: the old tables are freed in slices between loop turns
        (fakekey/memory/lazyfree.py), as Valkey frees them in the background."""
        self.touch_all_watchers()
        # waiters that care about deletion (XREADGROUP) are told, as for DEL
        gone = [key for key in self.waiting if key in self.data] if self.waiting else []
        table = self.state.memory.flushed(self) if self.state.memory is not None else None
        if lazy:
            self.state.reclaimer.hand(
                self.data.shards, len(self.data), self.expires.shards, self.access.touched.shards,
                self.lfu.shards, self.numbers_as_text, self.field_ttl_keys, table)
            self.data, self.expires, self.lfu = (Table(self.hashes), Table(self.hashes),
                                                 Table(self.hashes))
            self.access = AccessTimes(self.data)
            self.numbers_as_text, self.field_ttl_keys = set(), set()
        else:
            self.data.clear()
            self.expires.clear()
            self.access.clear()
            self.lfu.clear()
            self.numbers_as_text.clear()
            self.field_ttl_keys.clear()
        self.sampled_keys.clear()
        if self.slot_index is not None:
            self.slot_index.clear()
        self.sampled_volatile.clear()
        self.sampled_field_ttls.clear()
        self.scan_order = self.scan_added = None  # it would keep every key alive
        for key in gone:
            self.state.blocking.signal_deleted(self, key)

    def random_key(self) -> bytes | None:
        while self.data:
            key = self.sampled_keys.draw(self.data)
            if key is None:
                return None
            if not self._expire_if_due(key):
                return key
            if self.state.paused is not None or self.state.upstream is not None:
                return None  # expired keys stay while paused, and on a replica
        return None

    def __len__(self) -> int:
        return len(self.data)


class Databases:
    """A server's numbered databases (`databases` of them), each made on first use: a
    database is a score of containers the garbage collector walks for the server's whole
    life, and most servers use one or two (an in-process server is made in a fraction of
    a millisecond: bench/instances.py).

    `dbs[i]` is database i, made if need be. Iteration gives the databases made so far,
    in index order: one never made has no keys, deadlines, watched or blocked keys, so
    whatever sums, walks or empties the data sees the same without it. Code that needs
    each index reads `db.index`, or `made_at(i)` to look without making."""

    __slots__ = ("state", "slots")

    def __init__(self, state: ServerState, count: int) -> None:
        self.state = state
        self.slots: list[Database | None] = [None] * count

    def __len__(self) -> int:
        return len(self.slots)

    def __getitem__(self, index: int) -> Database:
        db = self.slots[index]  # IndexError past the end, as a list's
        if db is None:
            db = self._make(index if index >= 0 else index + len(self.slots))
        return db

    def __iter__(self) -> Iterator[Database]:
        return iter([db for db in self.slots if db is not None])

    def made_at(self, index: int) -> Database | None:
        """Database `index` if it was made (None: it is empty and nobody uses it)."""
        return self.slots[index]

    def truncate(self, count: int) -> None:
        """Keep the first `count` databases (cluster mode's cluster-databases)."""
        del self.slots[count:]

    def _make(self, index: int) -> Database:
        db = Database(self.state, index)
        if self.state.cluster is not None:  # a cluster node counts every database's keys per slot
            db.slot_index = SlotIndex()
        self.slots[index] = db
        return db
