"""List commands, the blocking ones included."""

from __future__ import annotations

from itertools import islice
from typing import Any

from fakekey.commands.args import NO_SUCH_KEY, SYNTAX, parse_int, parse_timeout, wrong_args
from fakekey.core.client import Client
from fakekey.core.dirty import ELEMENTS_CHANGED, INTEGER_REPLY, ONE_IF_WRITTEN, POPPED, POPPED_MANY, PUSHED
from fakekey.core.keyspace import Database
from fakekey.core.registry import command, keys_numkeys, keys_range
from fakekey.resp.replies import NULL_ARRAY, OK, ReplyError
from fakekey.types.list import ListValue

G = "list"
LLONG_MIN = -(2**63)
LLONG_MAX = 2**63 - 1
POSITIVE = ReplyError("ERR value is out of range, must be positive")
INDEX_RANGE = ReplyError("ERR index out of range")
COUNT_NEGATIVE = ReplyError("ERR COUNT can't be negative")
MAXLEN_NEGATIVE = ReplyError("ERR MAXLEN can't be negative")
RW_INSERT = "RW insert"
RW_ACCESS_DELETE = "RW access delete"


# --- shared helpers ----------------------------------------------------------------------


def lookup_list(c: Client, key: bytes) -> ListValue | None:
    return c.db.lookup_type(key, ListValue)


def push(c: Client, key: bytes, values: list[bytes], left: bool, only_existing: bool = False) -> int:
    """LPUSH/RPUSH/LPUSHX/RPUSHX: push in argument order; the new length."""
    db = c.db
    lst = lookup_list(c, key)
    event = "lpush" if left else "rpush"
    if lst is None:
        if only_existing:
            return 0
        lst = ListValue()
        _extend(lst, values, left)
        db.set_value(key, lst, event=event, klass="l")
        return len(lst)
    _extend(lst, values, left)
    db.written_value(key, lst, event, "l")  # the list at `key`, just looked up
    return len(lst)


def _extend(lst: ListValue, values: list[bytes], left: bool) -> None:
    # two calls, not `(lst.extendleft if left else lst.extend)(values)`: compiled, a
    # method taken as a value is a bound-method object and a generic call (~1,000
    # instructions an LPUSH); a method called directly is a native call
    if left:
        lst.extendleft(values)
    else:
        lst.extend(values)


def pop_many(db: Database, key: bytes, lst: ListValue, left: bool, count: int) -> list[bytes]:
    """Pop up to `count` elements from one end, through the funnel."""
    n = min(count, len(lst))
    out = [lst.popleft() for _ in range(n)] if left else [lst.pop() for _ in range(n)]
    db.written(key, "lpop" if left else "rpop", "l")
    return out


def parse_where(raw: bytes) -> bool:
    """LEFT -> True, RIGHT -> False, else a syntax error."""
    word = raw.upper()
    if word == b"LEFT":
        return True
    if word == b"RIGHT":
        return False
    raise SYNTAX


def move(c: Client, src: bytes, dst: bytes, from_left: bool, to_left: bool) -> bytes | None:
    """LMOVE's core: pop from `src`, push to `dst` (type-checked only if src has data)."""
    db = c.db
    source = lookup_list(c, src)
    if not source:
        return None
    target = source if src == dst else lookup_list(c, dst)
    value = source.popleft() if from_left else source.pop()
    pop_event = "lpop" if from_left else "rpop"
    push_event = "lpush" if to_left else "rpush"
    # Valkey announces the push to the destination before the pop from the source
    if target is None:
        db.set_value(dst, ListValue([value]), event=push_event, klass="l")
    else:
        if to_left:
            target.appendleft(value)
        else:
            target.append(value)
        db.written(dst, push_event, "l")
    db.written(src, pop_event, "l")
    return value


def normalize_range(start: int, end: int, size: int) -> tuple[int, int] | None:
    """LRANGE/LTRIM index rules: negatives from the end; None when the range is empty."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if start < 0:
        start = 0
    if start > end or start >= size:
        return None
    return start, min(end, size - 1)


def block_or_timeout(c: Client, keys: list[bytes], deadline: int, argv: list[bytes], denied_reply: Any) -> Any:
    return c.state.blocking.wait_or_deny(c, keys, deadline, argv, denied_reply, ("list",))


# --- pushes ------------------------------------------------------------------------------

PUSH_COMPLEXITY = ("O(1) for each element added, so O(N) to add N elements when the command is "
                   "called with multiple arguments.")


@command("lpush", -3, "write denyoom fast", keys=keys_range(1, flags=RW_INSERT), acl="list",
         group=G, since="1.0.0", complexity=PUSH_COMPLEXITY,
         summary="Prepends elements to a list, creating it if needed.", dirty=PUSHED)
def lpush(c: Client, argv: list[bytes]) -> Any:
    return push(c, argv[1], argv[2:], left=True)


@command("rpush", -3, "write denyoom fast", keys=keys_range(1, flags=RW_INSERT), acl="list",
         group=G, since="1.0.0", complexity=PUSH_COMPLEXITY,
         summary="Appends elements to a list, creating it if needed.", dirty=PUSHED)
def rpush(c: Client, argv: list[bytes]) -> Any:
    return push(c, argv[1], argv[2:], left=False)


@command("lpushx", -3, "write denyoom fast", keys=keys_range(1, flags=RW_INSERT), acl="list",
         group=G, since="2.2.0", complexity=PUSH_COMPLEXITY,
         summary="Prepends elements to a list only when the list exists.", dirty=PUSHED)
def lpushx(c: Client, argv: list[bytes]) -> Any:
    return push(c, argv[1], argv[2:], left=True, only_existing=True)


@command("rpushx", -3, "write denyoom fast", keys=keys_range(1, flags=RW_INSERT), acl="list",
         group=G, since="2.2.0", complexity=PUSH_COMPLEXITY,
         summary="Appends elements to a list only when the list exists.", dirty=PUSHED)
def rpushx(c: Client, argv: list[bytes]) -> Any:
    return push(c, argv[1], argv[2:], left=False, only_existing=True)


@command("linsert", 5, "write denyoom", keys=keys_range(1, flags=RW_INSERT), acl="list",
         group=G, since="2.2.0", complexity="O(N) where N is the number of elements to traverse before seeing the value pivot. "
         "This means that inserting somewhere on the left end on the list (head) can be considered "
         "O(1) and inserting somewhere on the right end (tail) is O(N).",
         summary="Inserts an element before or after another element of a list.")
def linsert(c: Client, argv: list[bytes]) -> Any:
    where = argv[2].upper()
    if where not in (b"BEFORE", b"AFTER"):
        raise SYNTAX
    lst = lookup_list(c, argv[1])
    if lst is None:
        return 0
    try:
        index = lst.index(argv[3])
    except ValueError:
        return -1
    lst.insert(index if where == b"BEFORE" else index + 1, argv[4])
    c.db.written(argv[1], "linsert", "l")
    return len(lst)


# --- pops ----------------------------------------------------------------------------------


def pop_command(c: Client, argv: list[bytes], left: bool) -> Any:
    if len(argv) > 3:
        raise wrong_args(argv[0].lower().decode())
    count = None
    if len(argv) == 3:
        count = parse_int(argv[2], POSITIVE)
        if count < 0:
            raise POSITIVE
    lst = lookup_list(c, argv[1])
    if lst is None:
        return None if count is None else NULL_ARRAY
    if count is None:  # one element, the commonest: no list of them
        value = lst.popleft() if left else lst.pop()
        c.db.written(argv[1], "lpop" if left else "rpop", "l")
        return value
    if count == 0:
        return []
    return pop_many(c.db, argv[1], lst, left, count)


@command("lpop", -2, "write fast", keys=keys_range(1, flags=RW_ACCESS_DELETE), acl="list",
         group=G, since="1.0.0", complexity="O(N) where N is the number of elements returned",
         summary="Removes and returns the first elements of a list.", dirty=POPPED)
def lpop(c: Client, argv: list[bytes]) -> Any:
    return pop_command(c, argv, left=True)


@command("rpop", -2, "write fast", keys=keys_range(1, flags=RW_ACCESS_DELETE), acl="list",
         group=G, since="1.0.0", complexity="O(N) where N is the number of elements returned",
         summary="Removes and returns the last elements of a list.", dirty=POPPED)
def rpop(c: Client, argv: list[bytes]) -> Any:
    return pop_command(c, argv, left=False)


def blocking_pop(c: Client, argv: list[bytes], left: bool) -> Any:
    deadline = parse_timeout(argv[-1], c.state.now)
    keys = argv[1:-1]
    for key in keys:
        lst = lookup_list(c, key)
        if lst:
            return [key, pop_many(c.db, key, lst, left, 1)[0]]
    return block_or_timeout(c, keys, deadline, argv, NULL_ARRAY)


@command("blpop", -3, "write blocking", keys=keys_range(1, -2, flags=RW_ACCESS_DELETE),
         acl="list", group=G, since="2.0.0", complexity="O(N) where N is the number of provided keys.",
         summary="Pops the first element of the first non-empty list, waiting for one if none.")
def blpop(c: Client, argv: list[bytes]) -> Any:
    return blocking_pop(c, argv, left=True)


@command("brpop", -3, "write blocking", keys=keys_range(1, -2, flags=RW_ACCESS_DELETE),
         acl="list", group=G, since="2.0.0", complexity="O(N) where N is the number of provided keys.",
         summary="Pops the last element of the first non-empty list, waiting for one if none.")
def brpop(c: Client, argv: list[bytes]) -> Any:
    return blocking_pop(c, argv, left=False)


NUMKEYS = ReplyError("ERR numkeys should be greater than 0")
COUNT_POSITIVE = ReplyError("ERR count should be greater than 0")


def parse_mpop(argv: list[bytes], at: int, where_words: dict[bytes, Any]) -> tuple[list[bytes], Any, int]:
    """numkeys key... WHERE [COUNT n] from argv[at]: (keys, where, count). Shared with the
    sorted-set MPOPs (MIN/MAX)."""
    numkeys = parse_int(argv[at], NUMKEYS)
    if numkeys <= 0:
        raise NUMKEYS
    where_at = at + 1 + numkeys
    if where_at >= len(argv) or numkeys > len(argv):
        raise SYNTAX
    where = where_words.get(argv[where_at].upper())
    if where is None:
        raise SYNTAX
    count = 0
    i = where_at + 1
    while i < len(argv):
        if argv[i].upper() == b"COUNT" and not count and i + 1 < len(argv):
            count = parse_int(argv[i + 1], COUNT_POSITIVE)
            if count <= 0:
                raise COUNT_POSITIVE
            i += 2
        else:
            raise SYNTAX
    return argv[at + 1 : where_at], where, count or 1


_LIST_ENDS = {b"LEFT": True, b"RIGHT": False}


def mpop_first(c: Client, keys: list[bytes], left: bool, count: int) -> list[Any] | None:
    for key in keys:
        lst = lookup_list(c, key)
        if lst:
            return [key, pop_many(c.db, key, lst, left, count)]
    return None


def mpop_keys(argv: list[bytes], at: int) -> list[int]:
    try:
        numkeys = int(argv[at])
    except ValueError:
        return []
    return list(range(at + 1, min(at + 1 + max(numkeys, 0), len(argv))))


@command("lmpop", -4, "write movablekeys", keys=keys_numkeys(1, flags=RW_ACCESS_DELETE),
         acl="list", group=G, since="7.0.0",
         complexity="O(N+M) where N is the number of provided keys and M is the number of elements returned.",
         summary="Pops elements from the first non-empty list among several.", dirty=POPPED_MANY)
def lmpop(c: Client, argv: list[bytes]) -> Any:
    keys, left, count = parse_mpop(argv, 1, _LIST_ENDS)
    result = mpop_first(c, keys, left, count)
    return NULL_ARRAY if result is None else result


@command("blmpop", -5, "write blocking movablekeys", keys=keys_numkeys(2, flags=RW_ACCESS_DELETE),
         acl="list", group=G, since="7.0.0",
         complexity="O(N+M) where N is the number of provided keys and M is the number of elements returned.",
         summary="Pops elements from the first non-empty list among several, waiting if all are empty.", dirty=POPPED_MANY)
def blmpop(c: Client, argv: list[bytes]) -> Any:
    deadline = parse_timeout(argv[1], c.state.now)
    keys, left, count = parse_mpop(argv, 2, _LIST_ENDS)
    result = mpop_first(c, keys, left, count)
    if result is not None:
        return result
    return block_or_timeout(c, keys, deadline, argv, NULL_ARRAY)


# --- moves -----------------------------------------------------------------------------------

_MOVE_KEYS = (keys_range(1, flags=RW_ACCESS_DELETE), keys_range(2, flags=RW_INSERT))


@command("lmove", 5, "write denyoom", keys=_MOVE_KEYS, acl="list", group=G, since="6.2.0",
         summary="Pops an element from one end of a list and pushes it to an end of another.", dirty=ONE_IF_WRITTEN)
def lmove(c: Client, argv: list[bytes]) -> Any:
    return move(c, argv[1], argv[2], parse_where(argv[3]), parse_where(argv[4]))


@command("rpoplpush", 3, "write denyoom", keys=_MOVE_KEYS, acl="list", group=G, since="1.2.0",
         summary="Pops the last element of a list and prepends it to another list.", dirty=ONE_IF_WRITTEN)
def rpoplpush(c: Client, argv: list[bytes]) -> Any:
    return move(c, argv[1], argv[2], False, True)


def blocking_move(c: Client, argv: list[bytes], from_left: bool, to_left: bool, timeout: bytes) -> Any:
    deadline = parse_timeout(timeout, c.state.now)
    value = move(c, argv[1], argv[2], from_left, to_left)
    if value is not None:
        return value
    return block_or_timeout(c, [argv[1]], deadline, argv, None)


@command("blmove", 6, "write denyoom blocking", keys=_MOVE_KEYS, acl="list", group=G,
         since="6.2.0", summary="Moves an element between lists, waiting for one if the source is empty.", dirty=ONE_IF_WRITTEN)
def blmove(c: Client, argv: list[bytes]) -> Any:
    from_left, to_left = parse_where(argv[3]), parse_where(argv[4])
    return blocking_move(c, argv, from_left, to_left, argv[5])


@command("brpoplpush", 4, "write denyoom blocking", keys=_MOVE_KEYS, acl="list", group=G,
         since="2.2.0",
         summary="Moves the last element of a list to the head of another, waiting if empty.", dirty=ONE_IF_WRITTEN)
def brpoplpush(c: Client, argv: list[bytes]) -> Any:
    return blocking_move(c, argv, False, True, argv[3])


# --- reads -----------------------------------------------------------------------------------


@command("llen", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl="list", group=G,
         since="1.0.0", summary="Answers the length of a list.")
def llen(c: Client, argv: list[bytes]) -> Any:
    lst = lookup_list(c, argv[1])
    return 0 if lst is None else len(lst)


@command("lrange", 4, "readonly", keys=keys_range(1, flags="RO access"), acl="list", group=G,
         since="1.0.0",
         complexity="O(S+N) where S is the distance of start offset from HEAD for small lists, "
         "from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
         summary="Answers a range of elements of a list.")
def lrange(c: Client, argv: list[bytes]) -> Any:
    start, end = parse_int(argv[2]), parse_int(argv[3])
    lst = lookup_list(c, argv[1])
    if lst is None:
        return []
    span = normalize_range(start, end, len(lst))
    if span is None:
        return []
    return list(islice(lst, span[0], span[1] + 1))


@command("lindex", 3, "readonly", keys=keys_range(1, flags="RO access"), acl="list", group=G,
         since="1.0.0",
         complexity="O(N) where N is the number of elements to traverse to get to the element at index. "
         "This makes asking for the first or the last element of the list O(1).",
         summary="Answers the element at an index of a list.")
def lindex(c: Client, argv: list[bytes]) -> Any:
    lst = lookup_list(c, argv[1])  # a missing key answers null before the index is read
    if lst is None:
        return None
    index = parse_int(argv[2])
    if index < 0:
        index += len(lst)
    if not 0 <= index < len(lst):
        return None
    return lst[index]


@command("lpos", -3, "readonly", keys=keys_range(1, flags="RO access"), acl="list", group=G,
         since="6.0.6",
         complexity="O(N) where N is the number of elements in the list, for the average case. When "
         "searching for elements near the head or the tail of the list, or when the MAXLEN option is "
         "provided, the command may run in constant time.",
         summary="Answers the index of matching elements of a list.")
def lpos(c: Client, argv: list[bytes]) -> Any:
    rank, count, maxlen = 1, None, 0
    i = 3
    while i < len(argv):
        opt = argv[i].upper()
        if i + 1 >= len(argv):
            raise SYNTAX
        if opt == b"RANK":
            rank = parse_int(argv[i + 1])
            if rank == 0:
                raise ReplyError(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the "
                    "second ... or use negative to start from the end of the list"
                )
            if rank == LLONG_MIN:
                raise ReplyError(
                    "ERR value is out of range, value must between -9223372036854775807 and "
                    "9223372036854775807"
                )
        elif opt == b"COUNT":
            count = parse_int(argv[i + 1], COUNT_NEGATIVE)  # any bad value is "negative"
            if count < 0:
                raise COUNT_NEGATIVE
        elif opt == b"MAXLEN":
            maxlen = parse_int(argv[i + 1], MAXLEN_NEGATIVE)
            if maxlen < 0:
                raise MAXLEN_NEGATIVE
        else:
            raise SYNTAX
        i += 2
    lst = lookup_list(c, argv[1])
    if lst is None:
        return None if count is None else []
    matches = find_positions(lst, argv[2], rank, 1 if count is None else count, maxlen)
    if count is None:
        return matches[0] if matches else None
    return matches


def find_positions(lst: ListValue, element: bytes, rank: int, count: int, maxlen: int) -> list[int]:
    """LPOS's scan: skip |rank|-1 matches, collect `count` (0 = all), look at most maxlen."""
    size = len(lst)
    forward = rank > 0
    skip = abs(rank) - 1
    indexes = range(size) if forward else range(size - 1, -1, -1)
    items = iter(lst) if forward else reversed(lst)
    found: list[int] = []
    for seen, (index, item) in enumerate(zip(indexes, items)):
        if maxlen and seen >= maxlen:
            break
        if item == element:
            if skip:
                skip -= 1
                continue
            found.append(index)
            if count and len(found) >= count:
                break
    return found


# --- in-place edits ---------------------------------------------------------------------------


@command("lset", 4, "write denyoom", keys=keys_range(1, flags="RW update"), acl="list", group=G,
         since="1.0.0", complexity="O(N) where N is the length of the list. Setting either the "
         "first or the last element of the list is O(1).",
         summary="Replaces the element at an index of a list.")
def lset(c: Client, argv: list[bytes]) -> Any:
    lst = lookup_list(c, argv[1])  # the key is checked before the index is read
    if lst is None:
        raise NO_SUCH_KEY
    index = parse_int(argv[2])
    if index < 0:
        index += len(lst)
    if not 0 <= index < len(lst):
        raise INDEX_RANGE
    lst[index] = argv[3]
    c.db.written(argv[1], "lset", "l")
    return OK


@command("lrem", 4, "write", keys=keys_range(1, flags="RW delete"), acl="list", group=G,
         since="1.0.0", complexity="O(N+M) where N is the length of the list and M is the number of elements removed.",
         summary="Removes occurrences of an element from a list.", dirty=INTEGER_REPLY)
def lrem(c: Client, argv: list[bytes]) -> Any:
    count = parse_int(argv[2])
    lst = lookup_list(c, argv[1])
    if lst is None:
        return 0
    element = argv[3]
    limit = abs(count) or len(lst)
    items = list(lst) if count >= 0 else list(reversed(lst))
    kept: list[bytes] = []
    removed = 0
    for item in items:
        if removed < limit and item == element:
            removed += 1
        else:
            kept.append(item)
    if removed:
        lst.clear()
        lst.extend(kept if count >= 0 else reversed(kept))
        c.db.written(argv[1], "lrem", "l")
    return removed


@command("ltrim", 4, "write", keys=keys_range(1, flags="RW delete"), acl="list", group=G,
         since="1.0.0", complexity="O(N) where N is the number of elements to be removed by the operation.",
         summary="Keeps only a range of elements of a list, deleting the rest.", dirty=ELEMENTS_CHANGED)
def ltrim(c: Client, argv: list[bytes]) -> Any:
    start, end = parse_int(argv[2]), parse_int(argv[3])
    lst = lookup_list(c, argv[1])
    if lst is None:
        return OK
    span = normalize_range(start, end, len(lst))
    if span is None:
        lst.clear()
    else:
        for _ in range(len(lst) - span[1] - 1):
            lst.pop()
        for _ in range(span[0]):
            lst.popleft()
    c.db.written(argv[1], "ltrim", "l")
    return OK
