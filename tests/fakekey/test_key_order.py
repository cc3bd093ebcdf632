"""SCAN's kept key order (fakekey/commands/key_order.py): a big keyspace's order is built
in slices between loop turns, the first pages wait for it with a cursor that stays at the
start, keys added or deleted meanwhile keep SCAN's guarantees, and a script, which holds
the loop, gets the order at once."""

from __future__ import annotations

import random

import redis
from hypothesis import given
from hypothesis import strategies as st

from fakekey import Server
from fakekey.commands.key_order import SORT_AT_ONCE, Build
from fakekey.commands.scan import table_bits

BIG = SORT_AT_ONCE + 20_000


def loaded(server: Server, count: int) -> redis.Redis:
    r = redis.Redis.from_url(server.url)
    pipe = r.pipeline(transaction=False)
    for i in range(0, count, 1000):
        pipe.mset({f"key:{j}": "v" for j in range(i, min(i + 1000, count))})
    pipe.execute()
    return r


@given(st.lists(st.binary(max_size=8), unique=True, max_size=3000))
def test_a_build_in_slices_sorts_as_one_sort(keys: list[bytes]) -> None:
    build = Build(list(keys))
    while not build.step(0):  # a deadline already passed: one step a call
        pass
    assert build.result() == sorted(keys, key=hash)


def test_a_big_keyspace_is_scanned_whole_while_it_changes() -> None:
    with Server() as server:
        r = loaded(server, BIG)
        cursor, seen, waited = 0, set(), 0
        bound = 1 << (table_bits(BIG) + 1)
        added = [f"new:{i}".encode() for i in range(500)]
        gone = [f"key:{i}".encode() for i in random.sample(range(BIG), 500)]
        calls = 0
        while True:
            cursor, keys = r.scan(cursor, count=500)
            calls += 1
            waited += not keys and cursor != 0
            assert 0 <= cursor < bound
            seen.update(keys)
            if calls == 5:  # mid-iteration: some keys come, some go
                r.mset({key: "v" for key in added})
                r.delete(*gone)
            if cursor == 0:
                break
        assert waited >= 1  # the first pages waited for the order
        present_throughout = {f"key:{i}".encode() for i in range(BIG)} - set(gone)
        assert present_throughout <= seen
        assert seen <= present_throughout | set(gone) | set(added)
        # a second iteration starts at once from the kept order, the new keys in it
        first_cursor, first_keys = r.scan(0, count=1000)
        assert first_keys and first_cursor != 0
        assert set(r.scan_iter(count=1000)) == present_throughout | set(added)
        r.close()


def test_a_script_scanning_a_big_keyspace_gets_the_order_at_once() -> None:
    walk = """
        local cursor, count = '0', 0
        repeat
            local page = redis.call('SCAN', cursor, 'COUNT', 1000)
            cursor = page[1]
            count = count + #page[2]
        until cursor == '0'
        return count"""
    with Server() as server:
        r = loaded(server, BIG)
        assert r.eval(walk, 0) >= BIG
        r.close()
