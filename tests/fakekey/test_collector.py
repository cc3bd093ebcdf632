"""fakekey-server lets no full garbage collection start by itself (memory/collector.py):
what it relies on is that the server leaves no reference cycles behind, and that the
collector's policy does what it says. The pauses it removes are measured in
bench/stalls.py (`gc-full-collection`), not here."""

from __future__ import annotations

import gc
import socket
import time
from collections.abc import Iterator

import pytest

from fakekey import Server
from fakekey.memory import collector
from fakekey.testing.raw import RawClient


@pytest.fixture
def saved_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def _fakekey_garbage() -> list[str]:
    """The fakekey objects a full collection finds unreachable (kept to be listed)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return [type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage
                if type(o).__module__.startswith("fakekey.")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _session(port: int, i: int) -> None:
    """One client's life, touching what keeps per-client state."""
    raw = RawClient("127.0.0.1", port)
    try:
        raw.call("CLIENT", "SETNAME", f"c{i}")
        raw.call("SET", "k", "1")
        raw.call("LPUSH", "k", "x")  # an error reply
        raw.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "k")
        raw.call("WATCH", "k")
        raw.call("MULTI")
        raw.call("INCR", "k")
        raw.call("EXEC")
        raw.call("CLIENT", "TRACKING", "ON")
        raw.call("GET", "k")
        raw.call("BLPOP", "nothing", "0.01")
        raw.call("SUBSCRIBE", "ch")
    finally:
        raw.close()


def test_closed_connections_leave_no_cycles() -> None:
    with Server() as server:
        gc.collect()  # earlier tests' dropped servers: their finalizers stop them...
        gc.collect()  # ...and what they held is freed now, not counted below
        for i in range(20):
            _session(server.port, i)
        # one connection the server closes itself (CLIENT KILL), mid-subscription
        killer = RawClient("127.0.0.1", server.port)
        victim = socket.create_connection(("127.0.0.1", server.port))
        victim.sendall(b"CLIENT SETNAME victim\r\nSUBSCRIBE ch\r\n")
        victim.recv(100)
        killer.call("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "pubsub")
        killer.close()
        victim.close()
        deadline = time.monotonic() + 5
        while server.state.clients and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not server.state.clients
        assert _fakekey_garbage() == []


def test_the_owner_never_lets_a_full_collection_start_by_itself(saved_collector: None) -> None:
    collector.own_the_collector()
    young, middle, oldest = gc.get_threshold()
    assert oldest == collector.NEVER
    assert (young, middle) != (0, 0)  # the young generations are still collected


def test_what_lives_at_start_is_set_aside(saved_collector: None) -> None:
    before = gc.get_freeze_count()
    collector.set_aside_what_lives()
    assert gc.get_freeze_count() > before


def test_a_full_collection_runs_only_while_cheap() -> None:
    runs: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            runs.append(2)

    gc.callbacks.append(seen)
    try:
        assert not collector.collect_if_cheap(lambda: collector.CHEAP_KEYS + 1)
        assert runs == []
        assert collector.collect_if_cheap(lambda: collector.CHEAP_KEYS)
        assert runs == [2]
    finally:
        gc.callbacks.remove(seen)
