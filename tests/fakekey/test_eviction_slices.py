"""maxmemory on a big keyspace: the keys already there are counted, and evicted, a slice
at a time between loop turns (Valkey's evictionTimeProc and its tenacity), so CONFIG SET
maxmemory or a command over the limit never holds the other clients for long."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from fakekey import Server
from fakekey.memory.eviction import STARTUP_MEMORY, MemoryTracker, eviction_time_limit_ns, used_memory

KEYS = 60_000
ONE_SMALL_KEY = 256  # bytes, at most, of one short string key's estimate


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.01)


def loaded(server: Server) -> redis.Redis:
    r = redis.Redis.from_url(server.url)
    pipe = r.pipeline(transaction=False)
    for i in range(0, KEYS, 1000):
        pipe.mset({f"key:{j}": "x" * 20 for j in range(i, i + 1000)})
    pipe.execute()
    return r


def test_the_keys_there_are_counted_in_slices_to_the_same_total() -> None:
    with Server() as server:
        r = loaded(server)
        r.config_set("maxmemory", "1gb")
        tracker = server.state.memory
        assert tracker is not None
        until(lambda: not tracker.uncounted)
        whole = MemoryTracker.__new__(MemoryTracker)  # counted at once, for comparison
        whole.state, whole.tables, whole.used = server.state, {}, 0
        for db in server.state.dbs:
            for key in db.data:
                whole.changed(db, key)
        assert tracker.used == whole.used
        r.close()


def test_eviction_past_its_time_limit_goes_on_between_loop_turns() -> None:
    with Server(maxmemory_policy="allkeys-random") as server:
        r = loaded(server)
        r.config_set("maxmemory", "1gb")
        until(lambda: not server.state.memory.uncounted)
        used = r.info("memory")["used_memory"]
        limit = STARTUP_MEMORY + (used - STARTUP_MEMORY) // 10
        r.config_set("maxmemory", str(limit))
        assert r.set("written", "while evicting")  # not refused: eviction is running
        state = server.state  # watched without commands: eviction goes on by itself
        # until it fits; the SET's own key may come after the last eviction fitted (when the
        # SET's slice was the one that fitted): Valkey evicts again only before a command
        until(lambda: not state.evicting and used_memory(state) <= limit + ONE_SMALL_KEY)
        stats = r.info("stats")
        assert stats["evicted_keys"] > KEYS // 2
        assert stats["current_eviction_exceeded_time"] == 0
        r.close()


def test_eviction_begins_when_the_keys_there_are_counted() -> None:
    """maxmemory set below a keyspace still being counted: the estimate covers the keys
    not counted yet, and eviction runs on without any command to start it."""
    with Server(maxmemory_policy="allkeys-random") as server:
        r = loaded(server)
        r.config_set("maxmemory", "1200000")  # and no command after it
        r.close()
        state = server.state
        until(lambda: state.memory is not None and not state.memory.uncounted)
        until(lambda: STARTUP_MEMORY + state.memory.used <= 1_200_000)
        assert state.stats["evicted_keys"] > 0


def test_tenacity_sets_the_time_limit_as_valkey() -> None:
    assert eviction_time_limit_ns(0) == 0
    assert eviction_time_limit_ns(10) == 500_000
    assert eviction_time_limit_ns(11) == 575_000
    assert eviction_time_limit_ns(100) > 10**15  # no limit
