"""SCAN's cursors are small, as Valkey's are: a bucket of a table sized to the collection,
in reverse-binary order. A script that keeps a cursor as a Lua number and turns it back
into text (`tostring` prints 14 significant digits) walks every item, and a cursor past
the table is masked, not refused."""

from __future__ import annotations

import pytest

U64_MAX = 2**64 - 1
KINDS = {"SCAN": None, "HSCAN": "h", "SSCAN": "s", "ZSCAN": "z"}  # kind -> key
PAIRED = ("HSCAN", "ZSCAN")  # their pages hold item, value, item, value...


def fill(r, kind: str, n: int) -> set[bytes]:
    """`n` items in the collection `kind` walks (the keyspace for SCAN); past 128 items a
    hash, set or sorted set is a hashtable (a skiplist), which pages its scan."""
    items = [f"item:{i}" for i in range(n)]
    for start in range(0, n, 500):
        chunk = items[start:start + 500]
        if kind == "SCAN":
            r.call("MSET", *[x for item in chunk for x in (item, "v")])
        elif kind == "HSCAN":
            r.call("HSET", "h", *[x for item in chunk for x in (item, "v")])
        elif kind == "SSCAN":
            r.call("SADD", "s", *chunk)
        else:
            r.call("ZADD", "z", *[x for item in chunk for x in ("1", item)])
    return {item.encode() for item in items}


def bound(n: int) -> int:
    """Above every cursor of an `n`-item table: twice the power of two that holds `n`."""
    return 2 ** ((n - 1).bit_length() + 1)


def scan(r, kind: str, cursor: int | str, *options: str) -> tuple[int, list[bytes]]:
    """One call: the next cursor and the items (values and scores left out)."""
    key = KINDS[kind]
    head = [kind] if key is None else [kind, key]
    _, ((_, next_cursor), (_, page)) = r.call(*head, cursor, *options)
    items = [value for _, value in page]
    return int(next_cursor), items[::2] if kind in PAIRED else items


def walk(r, kind: str, cursor: int | str = 0) -> tuple[list[int], list[bytes]]:
    """An iteration from `cursor` to its end: the cursors handed out, the items seen."""
    cursors: list[int] = []
    seen: list[bytes] = []
    while True:
        cursor, items = scan(r, kind, cursor, "COUNT", "10")
        seen += items
        if cursor == 0:
            return cursors, seen
        cursors.append(cursor)


def encoding(r, kind: str) -> bytes | None:
    key = KINDS[kind]
    return None if key is None else r.call("OBJECT", "ENCODING", key)[1]


@pytest.mark.parametrize("kind,n", [("SCAN", 100), ("SCAN", 1000), ("HSCAN", 1000),
                                    ("SSCAN", 1000), ("ZSCAN", 1000)])
def test_cursors_stay_below_the_table_size(r, kind, n):
    items = fill(r, kind, n)
    assert encoding(r, kind) in (None, b"hashtable", b"skiplist")
    cursors, seen = walk(r, kind)
    assert len(cursors) > 1
    assert max(cursors) < bound(n)
    assert set(seen) == items


# The cursor is kept as a Lua number and sent back as tostring() writes it.
NUMERIC_CURSOR_WALK = """
local cursor, calls, seen, distinct = 0, 0, {}, 0
local step = (ARGV[1] == 'ZSCAN' or ARGV[1] == 'HSCAN') and 2 or 1
repeat
  local args = {ARGV[1]}
  if #KEYS > 0 then table.insert(args, KEYS[1]) end
  table.insert(args, tostring(cursor))
  table.insert(args, 'COUNT')
  table.insert(args, '10')
  local res = redis.call(unpack(args))
  cursor = tonumber(res[1])
  calls = calls + 1
  for i = 1, #res[2], step do
    if not seen[res[2][i]] then
      seen[res[2][i]] = true
      distinct = distinct + 1
    end
  end
until cursor == 0
return {distinct, calls}
"""


@pytest.mark.parametrize("kind,n", [("SCAN", 100), ("SCAN", 1000), ("HSCAN", 1000),
                                    ("SSCAN", 1000), ("ZSCAN", 1000)])
def test_a_lua_walk_with_numeric_cursors_sees_every_item(r, kind, n):
    fill(r, kind, n)
    key = KINDS[kind]
    keys = [] if key is None else [key]
    kind_, (distinct, calls) = r.call("EVAL", NUMERIC_CURSOR_WALK, len(keys), *keys, kind)
    assert kind_ == "*" and distinct == (":", n) and calls[1] > 1


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_largest_cursor_names_the_last_bucket(r, kind):
    n = 1000
    items = fill(r, kind, n)
    cursor, page = scan(r, kind, U64_MAX)  # masked to the last bucket in cursor order
    assert cursor == 0 and set(page) <= items
    cursor, page = scan(r, kind, str(U64_MAX), "COUNT", "1000")
    assert cursor == 0 and set(page) <= items


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("start", [U64_MAX - 1, 2**63 + 5, 2**40 + 3, 10**6])
def test_an_iteration_from_a_huge_cursor_ends_within_the_table(r, kind, start):
    n = 1000
    items = fill(r, kind, n)
    cursors, seen = walk(r, kind, start)
    assert all(0 < cursor < bound(n) for cursor in cursors)
    assert set(seen) <= items


def test_a_cursor_masked_to_zero_starts_a_whole_iteration(r):
    """The high bits of a cursor are dropped: 2**63 names bucket 0, the first, so the walk
    from there returns every key, those added since an earlier iteration too."""
    fill(r, "SCAN", 100)
    walk(r, "SCAN")
    r.call("MSET", *[x for i in range(100, 200) for x in (f"item:{i}", "v")])
    _, seen = walk(r, "SCAN", 2**63)
    assert set(seen) == {f"item:{i}".encode() for i in range(200)}


def test_a_small_keyspace_is_one_bucket(r):
    """Up to seven keys fit one bucket: any cursor answers them all, and the end."""
    fill(r, "SCAN", 7)
    for cursor in (0, 1, 7, U64_MAX):
        next_cursor, page = scan(r, "SCAN", cursor, "COUNT", "1")
        assert next_cursor == 0 and len(page) == 7
