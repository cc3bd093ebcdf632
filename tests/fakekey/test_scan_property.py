"""SCAN's guarantee as a property: under any interleaving of inserts and deletes between
calls, every key (member) present for the whole iteration is returned, and every cursor
is exact in a double. The cursors stay below the table's size, however it grows or
shrinks meanwhile, so a Lua script keeping them as numbers walks the same way. Runs
in-process on fakekey's ServerState."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.commands.scan import bucket_page, hash_order, reverse_bits, table_bits
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


# --- cursors within the table, sizes that jump, and Lua's numeric cursors --------------------

LUA_EXACT = 10**14  # Lua 5.1's tostring keeps 14 significant digits


def within_table(cursor: int, size: int) -> bool:
    """Below the power of two that holds `size` items (Valkey's table has fewer buckets)."""
    return cursor < 1 << (max(size, 1) - 1).bit_length()


class Kind:
    """One SCAN flavour in-process: its call, how items come and go, its size. Collections
    are hashtable-encoded and keep a `keeper` item, so the key outlives every removal."""

    def __init__(self, head: list[bytes], add: list[bytes], remove: list[bytes], size: list[bytes],
                 paired: bool) -> None:
        self.head, self.add, self.remove, self.size = head, add, remove, size
        self.paired = paired  # pages hold item, value, item, value...

    def adding(self, items: list[bytes]) -> list[bytes]:
        if self.add[0] == b"ZADD":
            return [*self.add, *[x for item in items for x in (b"2", item)]]
        if self.add[0] in (b"MSET", b"HSET"):
            return [*self.add, *[x for item in items for x in (item, b"v")]]
        return [*self.add, *items]


KINDS = {
    "SCAN": Kind([b"SCAN"], [b"MSET"], [b"DEL"], [b"DBSIZE"], paired=False),
    "SSCAN": Kind([b"SSCAN", b"k"], [b"SADD", b"k"], [b"SREM", b"k"], [b"SCARD", b"k"], paired=False),
    "ZSCAN": Kind([b"ZSCAN", b"k"], [b"ZADD", b"k"], [b"ZREM", b"k"], [b"ZCARD", b"k"], paired=True),
    "HSCAN": Kind([b"HSCAN", b"k"], [b"HSET", b"k"], [b"HDEL", b"k"], [b"HLEN", b"k"], paired=True),
}
HASHTABLE_ONLY = [(b"set-max-intset-entries", b"0"), (b"set-max-listpack-entries", b"0"),
                  (b"zset-max-listpack-entries", b"0"), (b"hash-max-listpack-entries", b"0")]

# A batch of changes between two calls: ops that add or remove one name, and at times a
# bulk op that adds many items or removes every bulk item, so the table's size (hence its
# number of buckets) jumps up and down within one iteration.
one_name = st.tuples(st.booleans(), names.map(lambda name: [b"x" + name]))
bulk = st.integers(-1, 300)  # -1: remove every bulk item, 0: none, n: add n more
batches = st.lists(st.tuples(st.lists(one_name, max_size=6), bulk), max_size=30)


def expand(between: list[tuple[list[tuple[bool, list[bytes]]], int]]) -> list[list[tuple[bool, list[bytes]]]]:
    """Each batch's ops with its bulk op made explicit (bulk items `b:0`, `b:1`...)."""
    made = 0
    out = []
    for ops, grow in between:
        batch = list(ops)
        if grow > 0:
            batch.append((True, [b"b:%d" % i for i in range(made, made + grow)]))
            made += grow
        elif grow < 0 and made:
            batch.append((False, [b"b:%d" % i for i in range(made)]))
        out.append(batch)
    return out


def prepared(kind: Kind, initial: set[bytes]) -> Client:
    c = new_client()
    for name, value in HASHTABLE_ONLY:
        c.state.call(c, [b"CONFIG", b"SET", name, value])
    items = [b"x" + name for name in initial]
    if kind.head[0] != b"SCAN":
        items.append(b"keeper")
    if items:
        c.state.call(c, kind.adding(items))
    return c


def walk(c: Client, kind: Kind, count: int, batches: list[list[tuple[bool, list[bytes]]]]
         ) -> tuple[list[bytes], list[int], list[int]]:
    """A whole iteration in Python, applying the next batch before each call after the
    first: the items seen, the cursors handed out, the size at each call."""
    seen: list[bytes] = []
    cursors: list[int] = []
    sizes: list[int] = []
    cursor = b"0"
    while True:
        cursor, page = c.state.call(c, [*kind.head, cursor, b"COUNT", b"%d" % count])
        seen.extend(page[::2] if kind.paired else page)
        sizes.append(c.state.call(c, kind.size))
        if cursor == b"0":
            return seen, cursors, sizes
        cursors.append(int(cursor))
        assert len(cursors) < 10_000, "the iteration does not end"
        for adding, items in batches[len(cursors) - 1] if len(cursors) <= len(batches) else []:
            c.state.call(c, kind.adding(items) if adding else [*kind.remove, *items])


# The same walk inside a script: the cursor is a Lua number between calls, sent back as
# tostring() writes it; ARGV after the first three are "+item"/"-item" changes, batches
# ended by an empty string.
LUA_WALK = b"""
local kind, key, count = ARGV[1], KEYS[1], ARGV[2]
local paired = ARGV[3] == '1'
local function change(op)
  local adding, item = string.sub(op, 1, 1) == '+', string.sub(op, 2)
  if kind == 'SCAN' then
    if adding then redis.call('SET', item, 'v') else redis.call('DEL', item) end
  elseif kind == 'SSCAN' then
    redis.call(adding and 'SADD' or 'SREM', key, item)
  elseif kind == 'HSCAN' then
    if adding then redis.call('HSET', key, item, 'v') else redis.call('HDEL', key, item) end
  elseif adding then
    redis.call('ZADD', key, 2, item)
  else
    redis.call('ZREM', key, item)
  end
end
local size_of = {SCAN = 'DBSIZE', SSCAN = 'SCARD', HSCAN = 'HLEN', ZSCAN = 'ZCARD'}
local seen, cursors, sizes = {}, {}, {}
local cursor, at = 0, 4
repeat
  local call = {kind}
  if key then table.insert(call, key) end
  table.insert(call, tostring(cursor))
  table.insert(call, 'COUNT')
  table.insert(call, count)
  local res = redis.call(unpack(call))
  cursor = tonumber(res[1])
  local step = paired and 2 or 1
  for i = 1, #res[2], step do table.insert(seen, res[2][i]) end
  if key then
    table.insert(sizes, redis.call(size_of[kind], key))
  else
    table.insert(sizes, redis.call('DBSIZE'))
  end
  if cursor ~= 0 then
    table.insert(cursors, cursor)
    if #cursors >= 10000 then return redis.error_reply('the iteration does not end') end
    while at <= #ARGV and ARGV[at] ~= '' do
      change(ARGV[at])
      at = at + 1
    end
    at = at + 1
  end
until cursor == 0
return {seen, cursors, sizes}
"""


def lua_walk(c: Client, kind: Kind, count: int, batches: list[list[tuple[bool, list[bytes]]]]
             ) -> tuple[list[bytes], list[int], list[int]]:
    changes: list[bytes] = []
    for batch in batches:
        changes += [(b"+" if adding else b"-") + item for adding, items in batch for item in items]
        changes.append(b"")
    keys = [] if kind.head[0] == b"SCAN" else [kind.head[1]]
    reply = c.state.call(c, [b"EVAL", LUA_WALK, b"%d" % len(keys), *keys, kind.head[0],
                             b"%d" % count, b"1" if kind.paired else b"0", *changes])
    seen, cursors, sizes = reply
    return seen, cursors, sizes


def check_walk(kind: Kind, initial: set[bytes], batches: list[list[tuple[bool, list[bytes]]]],
               walked: tuple[list[bytes], list[int], list[int]]) -> None:
    seen, cursors, sizes = walked
    touched = {item for batch in batches for _, items in batch for item in items}
    stable = {b"x" + name for name in initial} - touched
    assert stable <= set(seen)
    assert all(0 < cursor < LUA_EXACT for cursor in cursors)
    # sizes[i] is the size when cursors[i] was handed out
    assert all(within_table(cursor, size) for cursor, size in zip(cursors, sizes, strict=False))


@pytest.mark.parametrize("name", list(KINDS))
@given(initial=st.sets(names, max_size=200), between=batches, count=st.integers(1, 20))
def test_items_present_throughout_are_returned_whatever_the_size_does(name, initial, between, count):
    kind = KINDS[name]
    c = prepared(kind, initial)
    changes = expand(between)
    check_walk(kind, initial, changes, walk(c, kind, count, changes))


@pytest.mark.parametrize("name", list(KINDS))
@given(initial=st.sets(names, max_size=200), between=batches, count=st.integers(1, 20))
def test_a_lua_walk_with_numeric_cursors_returns_them_too(name, initial, between, count):
    kind = KINDS[name]
    c = prepared(kind, initial)
    changes = expand(between)
    check_walk(kind, initial, changes, lua_walk(c, kind, count, changes))


# --- the bucket walk itself, under any sizes and any rebuilt orders -------------------------


@given(
    stable=st.sets(st.binary(max_size=4), max_size=80),
    transient=st.sets(st.binary(min_size=5, max_size=6), max_size=80),
    steps=st.lists(st.tuples(st.integers(0, 5000), st.booleans(), st.sets(st.integers(0, 79))),
                   max_size=60),
    count=st.integers(1, 16),
)
def test_bucket_walk_covers_every_stable_item_under_any_sizes(stable, transient, steps, count):
    """Each step gives the table size of a call (its B, any, as a table grows or shrinks),
    whether the order is rebuilt from the items present, and which transient items are
    present: items present throughout come back, cursors are below the table, and the
    walk ends within as many calls as the biggest table has buckets."""
    transient_items = sorted(transient)
    present = set(stable) | set(transient_items)
    order = hash_order(present)
    cursor, seen, calls = 0, set(), 0
    biggest = 0
    while True:
        size, rebuild, toggled = steps[calls] if calls < len(steps) else (len(present), False, set())
        biggest = max(biggest, table_bits(size))
        if rebuild:
            order = hash_order(present)
        cursor, visited = bucket_page(order, cursor, size, count, present.__contains__)
        seen.update(visited)
        calls += 1
        assert cursor < 1 << table_bits(size)
        if cursor == 0:
            break
        assert calls <= 1 << biggest
        for i in toggled:
            if i < len(transient_items):
                present ^= {transient_items[i]}
    assert set(stable) <= seen


@pytest.mark.parametrize("size,bits", [(0, 0), (1, 0), (7, 0), (8, 1), (14, 1), (15, 2),
                                       (100, 4), (112, 4), (113, 5), (1000, 8)])
def test_table_bits_follow_valkeys_bucket_count(size, bits):
    assert table_bits(size) == bits


def test_reverse_bits():
    assert [reverse_bits(v, 3) for v in range(8)] == [0, 4, 2, 6, 1, 5, 3, 7]
    assert reverse_bits(1, 64) == 2**63 and reverse_bits(0, 0) == 0
