"""maxmemory: the used-memory estimate, the OOM refusal and eviction, as Valkey's evict.c.

While maxmemory is set, `MemoryTracker` keeps the keyspace's estimated bytes up to date:
the write funnel (fakekey/core/keyspace.py) tells it each key that changed or went, and it
re-estimates that key alone (fakekey/memory/estimate.py, a few elements sampled), so the check
before a command is one comparison, never a walk of the keyspace. With maxmemory 0 there
is no tracker and the funnel pays one attribute test. When maxmemory is set on a big
keyspace, the keys already there are counted a slice at a time between loop turns; until
they all are, the estimate is short of them.

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
import time
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Final

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
    from fakekey.core.table import Table

OOM = ReplyError("OOM command not allowed when used memory > 'maxmemory'.")
STARTUP_MEMORY = 1024 * 1024  # the server's own, as INFO memory reports it (admin.py)
POOL_SIZE = 16  # Valkey's EVPOOL_SIZE
_perf_counter_ns: Final = time.perf_counter_ns
FIRST_COUNT_NS = 20_000_000  # what CONFIG SET maxmemory counts at once before going on in slices
COUNT_SLICE_NS = 1_000_000
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
        self.uncounted_bytes = 0  # the keys not counted yet, at the counted ones' mean size
        # the clients' buffers, as the clients cron last measured them (net/client_eviction.py)
        self.clients_bytes = 0
        # measures them again (and evicts clients) when memory runs out: set by the cron
        self.client_meter: Callable[[], int] | None = None
        # the keys present when tracking began, estimated a slice at a time: a keyspace
        # of millions is counted between loop turns, not in one (`count_existing`)
        self.uncounted: list[tuple[Database, Table, list[bytes]]] = [
            (db, db.data, list(db.data)) for db in state.dbs if db.data]
        self.count_existing(_perf_counter_ns() + FIRST_COUNT_NS)

    def count_existing(self, deadline: int) -> None:
        """Estimate the keys not counted yet until the deadline; then again on the next
        loop turn until none is left (at once when no loop runs this server)."""
        loop = self.state.running_loop()
        uncounted = self.uncounted
        while uncounted:
            db, data, keys = uncounted[-1]
            owner = db if db.data is data else next((d for d in self.state.dbs if d.data is data), None)
            for _ in range(min(len(keys), 256)):
                key = keys.pop()
                if owner is not None and key in data and key not in self.table(owner).sizes:
                    self.changed(owner, key)
            if not keys:
                uncounted.pop()
            if loop is not None and _perf_counter_ns() > deadline:
                self._estimate_uncounted()
                loop.call_soon(self._count_more)
                return
        self.uncounted_bytes = 0

    def _estimate_uncounted(self) -> None:
        counted = sum(len(table.sizes) for table in self.tables.values())
        remaining = sum(len(keys) for _, _, keys in self.uncounted)
        self.uncounted_bytes = remaining * self.used // max(counted, 1)

    def _count_more(self) -> None:
        state = self.state
        if state.memory is not self:  # maxmemory was turned off
            return
        self.count_existing(_perf_counter_ns() + COUNT_SLICE_NS)
        if not self.uncounted and state.maxmemory and self.used + STARTUP_MEMORY > state.maxmemory:
            make_room(state)  # all counted, and over: eviction starts, as Valkey's would have

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
        if type(value) is int:  # a counter INCR left (fakekey/core/keyspace.py): its bytes
            value = b"%d" % value
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
    return STARTUP_MEMORY + tracker.used + tracker.uncounted_bytes + tracker.clients_bytes


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
    if (tracker is not None and STARTUP_MEMORY + tracker.used + tracker.uncounted_bytes
            + tracker.clients_bytes <= state.maxmemory):
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
    """Evict until the estimate fits maxmemory, for at most the time maxmemory-eviction-
    tenacity allows; past it, eviction goes on between loop turns (Valkey's
    evictionTimeProc) and the command runs meanwhile. False when nothing more can be
    evicted (performEvictions' EVICT_FAIL)."""
    if state.paused is not None:  # CLIENT PAUSE stops eviction: as if it fit (Valkey's)
        return True
    limit = state.maxmemory
    meter = state.memory.client_meter if state.memory is not None else None
    if meter is not None and used_memory(state) > limit:  # the clients, since the cron looked
        state.memory.clients_bytes = meter()  # type: ignore[union-attr]
    if used_memory(state) <= limit:
        eviction_ended(state)
        return True
    policy = state.config["maxmemory-policy"]
    if policy == "noeviction":
        eviction_exceeded(state)
        return False
    tracker = state.memory
    assert tracker is not None
    started = _perf_counter_ns()
    deadline = started + eviction_time_limit_ns(state.config["maxmemory-eviction-tenacity"])
    evicted = 0
    fits = True
    while STARTUP_MEMORY + tracker.used + tracker.uncounted_bytes + tracker.clients_bytes > limit:
        picked = pick_random(state, policy) if policy.endswith("-random") else pick_best(state, policy)
        if picked is None:  # nothing more to evict, unless keys are still being counted
            fits = bool(tracker.uncounted)
            break
        evict(state, *picked)
        evicted += 1
        if evicted % 16 == 0 and _perf_counter_ns() > deadline:
            evict_later(state)
            break
    state.latency_sample("eviction-cycle", (_perf_counter_ns() - started) // 1_000_000)
    if STARTUP_MEMORY + tracker.used + tracker.uncounted_bytes + tracker.clients_bytes <= limit:
        eviction_ended(state)
    else:
        eviction_exceeded(state)
    return fits


def eviction_time_limit_ns(tenacity: int) -> int:
    """Valkey's evictionTimeLimitUs: 50 us per step up to 10, then 15% more a step; none at 100."""
    if tenacity <= 10:
        return 50_000 * tenacity
    if tenacity < 100:
        return int(500.0 * 1.15 ** (tenacity - 10.0)) * 1000
    return 1 << 62


def evict_later(state: ServerState) -> None:
    """Go on evicting between loop turns until the estimate fits (evictionTimeProc)."""
    loop = state.running_loop()
    if loop is None or state.evicting:
        return
    state.evicting = True

    def go_on() -> None:
        state.evicting = False
        if state.maxmemory and state.memory is not None and state.busy_script is None:
            make_room(state)

    loop.call_soon(go_on)


def eviction_exceeded(state: ServerState) -> None:
    """INFO's current_eviction_exceeded_time: since when memory has stayed over the limit."""
    if not state.eviction_exceeded_at:
        state.eviction_exceeded_at = _perf_counter_ns()


def eviction_exceeded_ms(state: ServerState, total: bool) -> int:
    """INFO's total_ / current_eviction_exceeded_time, in ms."""
    current = (_perf_counter_ns() - state.eviction_exceeded_at) // 1000 if state.eviction_exceeded_at else 0
    return ((state.eviction_exceeded_us if total else 0) + current) // 1000


def eviction_ended(state: ServerState) -> None:
    if state.eviction_exceeded_at:
        state.eviction_exceeded_us += (_perf_counter_ns() - state.eviction_exceeded_at) // 1000
        state.eviction_exceeded_at = 0


def pick_random(state: ServerState, policy: str) -> tuple[Database, bytes] | None:
    """A key drawn at random, from the databases in turn (Valkey's next_db)."""
    tracker = state.memory
    assert tracker is not None
    count = len(state.dbs)
    for _ in range(count):
        state.next_eviction_db = (state.next_eviction_db + 1) % count
        db = state.dbs.made_at(state.next_eviction_db)
        if db is None:  # never made: no keys
            continue
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
    if not db.delete(key, event=None, lazy=lazy_setting(state, "eviction"), by_server=True):
        return  # it had expired: gone as an expiry
    state.dirty -= 1  # an eviction is not a change a save rule counts
    state.stats["evicted_keys"] += 1
    if state.feed is not None:  # replicas (and the log) learn it as the key's removal
        state.feed.expired(db.index, key)
    elif state.aof is not None:  # logged as the key's removal
        state.aof.expired(db.index, key)
    if state.notify_flags:
        state.notify(db, "e", "evicted", key)
