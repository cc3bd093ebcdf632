"""SCAN's guarantee as a property: under any interleaving of inserts and deletes between
calls, every key (member) present for the whole iteration is returned, and every cursor
is exact in a double. Runs in-process on fakekey's ServerState."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fakekey.core.client import Client
from fakekey.net.server import new_state

DOUBLE_EXACT = 2**53

names = st.binary(min_size=0, max_size=3)
changes = st.lists(st.tuples(st.booleans(), names), max_size=6)


def new_client() -> Client:
    state = new_state()
    client = Client(state)
    state.add_client(client)
    return client


def iterate(c: Client, scan: list[bytes], count: int, between: list[list[tuple[bool, bytes]]],
            add: list[bytes], remove: list[bytes], cursor_at: int) -> list[bytes]:
    """A whole iteration; before each call after the first, apply the next batch of
    changes: (True, name) adds `name`, (False, name) removes it."""
    seen: list[bytes] = []
    cursor = b"0"
    calls = 0
    while True:
        reply = c.state.call(c, [*scan[:cursor_at], cursor, *scan[cursor_at:], b"COUNT", b"%d" % count])
        cursor, page = reply
        assert int(cursor) < DOUBLE_EXACT
        seen.extend(page)
        if cursor == b"0":
            return seen
        batch = between[calls] if calls < len(between) else []
        calls += 1
        for adding, name in batch:
            c.state.call(c, [*(add if adding else remove), b"x" + name])


@given(initial=st.sets(names, max_size=60), between=st.lists(changes, max_size=40),
       count=st.integers(1, 12))
def test_scan_returns_every_key_present_throughout(initial, between, count):
    c = new_client()
    for name in initial:
        c.state.call(c, [b"SET", b"x" + name, b"v"])
    touched = {b"x" + name for batch in between for _, name in batch}
    seen = iterate(c, [b"SCAN"], count, between, [b"SET"], [b"DEL"], cursor_at=1)
    stable = {b"x" + name for name in initial} - touched
    assert stable <= set(seen)


@given(initial=st.sets(names, min_size=1, max_size=60), between=st.lists(changes, max_size=40),
       count=st.integers(1, 12))
def test_zscan_returns_every_member_present_throughout(initial, between, count):
    c = new_client()
    c.state.call(c, [b"CONFIG", b"SET", b"zset-max-listpack-entries", b"0"])  # a skiplist
    c.state.call(c, [b"ZADD", b"z", *[x for name in initial for x in (b"1", b"x" + name)]])
    c.state.call(c, [b"ZADD", b"z", b"0", b"keeper"])  # the key outlives every removal
    touched = {b"x" + name for batch in between for _, name in batch}
    seen = iterate(c, [b"ZSCAN", b"z"], count, between, [b"ZADD", b"z", b"2"], [b"ZREM", b"z"],
                   cursor_at=2)
    stable = {b"x" + name for name in initial} - touched
    assert stable <= set(seen[::2])  # members, then scores
