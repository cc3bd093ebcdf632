"""maxmemory: the used-memory estimate, the OOM refusal and eviction, as Valkey's evict.c.

While maxmemory is set, `MemoryTracker` keeps the keyspace's estimated bytes up to date:
the write funnel (fakekey/core/keyspace.py) tells it each key that changed or went, and it
re-estimates that key alone (fakekey/memory/estimate.py, a few elements sampled), so the check
before a command is one comparison, never a walk of the keyspace. With maxmemory 0 there
is no tracker and the funnel pays one attribute test.

Before a command runs (`ServerState.call`), `make_room` compares the estimate (plus the
server's own startup memory) with maxmemory; over it, the policy evicts keys until the
estimate fits, as performEvictions does: the random policies draw keys, the LRU, LFU and
TTL ones sample `maxmemory-samples` keys per database into a pool of 16 candidates and
evict the best. An evicted key is deleted as Valkey deletes it: WATCH is invalidated,
client-side caches are told, `evicted` is notified (class e), `evicted_keys` counts it.
When nothing can be evicted (noeviction, or a volatile policy without volatile keys),
denyoom commands get the OOM error.

LFU: fakekey counts no accesses per key; the LFU policies rank keys by the counter
OBJECT FREQ shows (its initial value decayed by idle time), which orders keys as LRU.
"""

from __future__ import annotations

import random
from itertools import islice
from typing import TYPE_CHECKING

import fakekey.memory.lfu as lfu
from fakekey.codecs.shebang import parse_shebang
from fakekey.memory.estimate import EXPIRE_ENTRY, HASHTABLE_ENTRY, SMALL_STRING, quick_key_size, size_class
from fakekey.memory.lazyfree import lazy_setting
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.keyspace import Database
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

OOM = ReplyError("OOM command not allowed when used memory > 'maxmemory'.")
STARTUP_MEMORY = 1024 * 1024  # the server's own, as INFO memory reports it (admin.py)
POOL_SIZE = 16  # Valkey's EVPOOL_SIZE
# A script with a shebang declaring one of these may run out of memory (scriptFlagsToCmdFlags).
OOM_ALLOWING_FLAGS = frozenset({"no-writes", "allow-oom"})
SCRIPT_COMMANDS = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})


class KeyTable:
    """One database's estimated key sizes, with the keys in a list to draw from at random."""

    __slots__ = ("sizes", "slots", "keys")

    def __init__(self) -> None:
        self.sizes: dict[bytes, int] = {}
        self.slots: dict[bytes, int] = {}  # key -> its index in `keys`
        self.keys: list[bytes] = []

    def put(self, key: bytes, size: int) -> int:
        """Record `key`'s size; the change in bytes."""
        old = self.sizes.get(key)
        self.sizes[key] = size
        if old is None:
            self.slots[key] = len(self.keys)
            self.keys.append(key)
            return size
        return size - old

    def drop(self, key: bytes) -> int:
        """Forget `key`; the bytes it had."""
        old = self.sizes.pop(key, None)
        if old is None:
            return 0
        slot = self.slots.pop(key)
        last = self.keys.pop()
        if last != key:  # the last key fills the hole
            self.keys[slot] = last
            self.slots[last] = slot
        return old

    def sample(self, count: int) -> list[bytes]:
        keys = self.keys
        if len(keys) <= count:
            return list(keys)
        return [keys[random.randrange(len(keys))] for _ in range(count)]


class MemoryTracker:
    """The keyspace's estimated bytes, kept up to date by the write funnel."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        # per database, by the identity of its data dict (SWAPDB exchanges the dicts)
        self.tables: dict[int, KeyTable] = {}
        self.used = 0
        for db in state.dbs:
            for key in db.data:
                self.changed(db, key)

    def table(self, db: Database) -> KeyTable:
        table = self.tables.get(id(db.data))
        if table is None:
            table = self.tables[id(db.data)] = KeyTable()
        return table

    def changed(self, db: Database, key: bytes) -> None:
        """`key` was written (or went): its new estimate replaces the old."""
        data = db.data
        table = self.tables.get(id(data)) or self.table(db)
        value = data.get(key)
        if value is None:
            self.used -= table.drop(key)
            return
        if type(value) is bytes and len(value) <= 44:  # the commonest: an embedded string
            size = size_class(SMALL_STRING + len(key) + len(value)) + HASHTABLE_ENTRY
        else:
            size = quick_key_size(key, value, self.state)
        if db.expires and key in db.expires:
            size += EXPIRE_ENTRY
        sizes = table.sizes
        old = sizes.get(key)
        if old is None:
            self.used += table.put(key, size)
        else:  # a key written again: its size alone changes
            sizes[key] = size
            self.used += size - old

    def removed(self, db: Database, key: bytes) -> None:
        self.used -= self.table(db).drop(key)

    def flushed(self, db: Database) -> KeyTable | None:
        """`db` is being emptied: its table leaves the count (returned, to be freed)."""
        table = self.tables.pop(id(db.data), None)
        if table is not None:
            self.used -= sum(table.sizes.values())
        return table


def used_memory(state: ServerState) -> int:
    """What maxmemory is compared with: the server's own memory and the dataset's."""
    tracker = state.memory
    if tracker is None:
        tracker = state.memory = MemoryTracker(state)
    return STARTUP_MEMORY + tracker.used


def maxmemory_changed(state: ServerState, maxmemory: int) -> None:
    """CONFIG SET maxmemory: tracking starts (from a walk of the keys) or stops. A lower
    limit evicts at once, as Valkey's CONFIG SET does."""
    state.maxmemory = maxmemory
    if not maxmemory:
        state.memory = None
        state.pre_command_oom = False
        return
    if state.memory is None:
        state.memory = MemoryTracker(state)
    make_room(state)


def refuses(state: ServerState, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
    """Before a command, with maxmemory set: evict what the policy allows, then the OOM
    refusal for a command that may grow memory (denyoom; anything queued in MULTI; EXEC
    of a queue holding one). Remembers the outcome for scripts (pre_command_oom)."""
    tracker = state.memory
    if tracker is not None and STARTUP_MEMORY + tracker.used <= state.maxmemory:
        state.pre_command_oom = False  # the common case, in one comparison
        return None
    out_of_memory = not make_room(state)
    state.pre_command_oom = out_of_memory
    if not out_of_memory:
        return None
    if "denyoom" in cmd.flags:  # queued or not: Valkey 9.1 queues the others in MULTI
        return OOM
    if cmd.name == "exec" and any("denyoom" in queued.flags for queued, _ in client.queued_commands()):
        return OOM
    if cmd.name in SCRIPT_COMMANDS and script_denies_oom(state, cmd.name, argv):
        return OOM
    return None


def script_denies_oom(state: ServerState, name: str, argv: list[bytes]) -> bool:
    """A script with flags (a shebang, or a function) that declares neither no-writes nor
    allow-oom is a denyoom command (Valkey's evalGetCommandFlags, scriptFlagsToCmdFlags).
    A script not found, or a shebang that does not parse, keeps the command's own flags."""
    flags: frozenset[str] | None = None
    try:
        if name in ("eval", "eval_ro"):
            engine, shebang_flags, _ = parse_shebang(argv[1])
            flags = None if engine is None else shebang_flags
        elif name in ("evalsha", "evalsha_ro") and state.scripts is not None:
            script = state.scripts.cache.get(argv[1].lower())
            flags = None if script is None or script.compat else script.flags
        elif name in ("fcall", "fcall_ro") and state.functions is not None:
            function = state.functions.lookup(argv[1])
            flags = None if function is None else function.flags
    except ReplyError:
        return False
    return flags is not None and not flags & OOM_ALLOWING_FLAGS


def make_room(state: ServerState) -> bool:
    """Evict until the estimate fits maxmemory; False when it cannot (performEvictions)."""
    if state.paused is not None:  # CLIENT PAUSE stops eviction: as if it fit (Valkey's)
        return True
    limit = state.maxmemory
    if used_memory(state) <= limit:
        return True
    policy = state.config["maxmemory-policy"]
    if policy == "noeviction":
        return False
    tracker = state.memory
    assert tracker is not None
    while STARTUP_MEMORY + tracker.used > limit:
        picked = pick_random(state, policy) if policy.endswith("-random") else pick_best(state, policy)
        if picked is None:
            return False
        evict(state, *picked)
    return True


def pick_random(state: ServerState, policy: str) -> tuple[Database, bytes] | None:
    """A key drawn at random, from the databases in turn (Valkey's next_db)."""
    tracker = state.memory
    assert tracker is not None
    count = len(state.dbs)
    for _ in range(count):
        state.next_eviction_db = (state.next_eviction_db + 1) % count
        db = state.dbs[state.next_eviction_db]
        if policy == "allkeys-random":
            keys = tracker.table(db).sample(1)
        else:
            keys = volatile_sample(tracker, db, 1)
        if keys:
            return db, keys[0]
    return None


def volatile_sample(tracker: MemoryTracker, db: Database, count: int) -> list[bytes]:
    """Keys with a deadline: drawn from every key, or the first ones when draws find none
    (few keys are volatile)."""
    expires = db.expires
    if not expires:
        return []
    found = [key for key in tracker.table(db).sample(count * 4) if key in expires][:count]
    return found or list(islice(expires, count))


def pick_best(state: ServerState, policy: str) -> tuple[Database, bytes] | None:
    """Fill the pool with samples from every database, then take the best candidate
    that still exists (evictionPoolPopulate and the pick after it)."""
    tracker = state.memory
    assert tracker is not None
    samples = state.config["maxmemory-samples"]
    pool: list[tuple[int, int, bytes]] = state.eviction_pool
    volatile = policy.startswith("volatile-")
    for db in state.dbs:
        keys = volatile_sample(tracker, db, samples) if volatile else tracker.table(db).sample(samples)
        for key in keys:
            score = _score(state, db, key, policy)
            entry = (score, db.index, key)
            if entry in pool:
                continue
            if len(pool) < POOL_SIZE:
                pool.append(entry)
            elif score > pool[0][0]:
                pool[0] = entry
            else:
                continue
            pool.sort()
    while pool:
        _, index, key = pool.pop()  # the highest score: the best to evict
        db = state.dbs[index]
        if key in db.data and (not volatile or key in db.expires):
            return db, key
    return None


def _score(state: ServerState, db: Database, key: bytes, policy: str) -> int:
    """Higher is evicted first: idle time (LRU), 255 less the LFU counter, or how soon
    the key expires (TTL)."""
    if policy.endswith("-ttl"):
        return (1 << 62) - db.expires.get(key, 1 << 62)
    if policy.endswith("-lfu"):  # Valkey's counter, decayed (fakekey/memory/lfu.py)
        packed = db.lfu.get(key) or lfu.fresh(state.now)
        return 255 - lfu.decayed(packed, state.now, state.config["lfu-decay-time"])
    return max(0, state.now - db.access.get(key, state.now))


def evict(state: ServerState, db: Database, key: bytes) -> None:
    """Delete a key for memory, as Valkey's deleteEvictedKeyAndPropagate."""
    if not db.delete(key, event=None, lazy=lazy_setting(state, "eviction")):
        return  # it had expired: gone as an expiry
    state.dirty -= 1  # an eviction is not a change a save rule counts
    state.stats["evicted_keys"] += 1
    if state.aof is not None:  # logged as the key's removal
        state.aof.expired(db.index, key)
    if state.notify_flags:
        state.notify(db, "e", "evicted", key)
