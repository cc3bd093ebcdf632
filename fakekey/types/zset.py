"""The sorted-set type: a dict member -> score plus an order-statistic sorted list.

Order is Valkey's: by score, then by member byte-wise (memcmp, a shorter prefix first),
which is exactly how Python compares `(score, member)` tuples of a float and bytes.
NaN is never stored, and -0.0 compares equal to 0.0 as in C.

`SortedKeys` keeps the `(score, member)` keys in a list of sorted sublists of at most
`2 * LOAD` keys each, with the last key of every sublist in `_maxes` and a Fenwick tree
over the sublist lengths for positions. With k = n / LOAD sublists:

- insert, delete: O(log n) comparisons plus an O(LOAD) memmove inside one sublist;
  a split or merge (every ~LOAD changes) rebuilds the Fenwick tree in O(k);
- rank of a key, key at a position: O(log n);
- first position where a monotone predicate holds (score and lex bounds): O(log n);
- iterating m keys from a position, deleting a run of m keys: O(log n + m).

`ZSet` also tracks the encoding Valkey would have (listpack or skiplist): it decides what
OBJECT ENCODING answers and two observable quirks that follow the encoding:

- a listpack stores an integral score as an integer, so a -0 score reads back as 0;
- LIMIT with a negative offset, and lex ranges over members whose scores differ, follow
  the listpack's linear walk or the skiplist's search (see `range_query`).
"""

from __future__ import annotations

import math
import random
import struct
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

from fakekey.types.packed import LENGTH_BYTE, MAX_ITEM

if TYPE_CHECKING:
    from fakekey.types.value import Configured

Key = tuple[float, bytes]
Pair = tuple[bytes, float]

LOAD = 1000  # sublist target size; a sublist splits past 2 * LOAD, merges under LOAD / 2


class SortedKeys:
    """A sorted list of keys with O(log n) insert, delete, rank and positional access."""

    __slots__ = ("_lists", "_maxes", "_tree", "_len")

    def __init__(self, keys: list[Key] | None = None) -> None:
        """`keys`, when given, must already be sorted and free of duplicates."""
        self._lists: list[list[Key]] = []
        self._maxes: list[Key] = []
        self._tree: list[int] | None = None  # Fenwick tree over sublist lengths; None = stale
        self._len = 0
        if keys:
            self._lists = [keys[i : i + LOAD] for i in range(0, len(keys), LOAD)]
            self._maxes = [sub[-1] for sub in self._lists]
            self._len = len(keys)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Key]:
        for sub in self._lists:
            yield from sub

    def copy(self) -> SortedKeys:
        clone = SortedKeys()
        clone._lists = [list(sub) for sub in self._lists]
        clone._maxes = list(self._maxes)
        clone._len = self._len
        return clone

    # --- the positional index ----------------------------------------------------------

    def _fenwick(self) -> list[int]:
        """The Fenwick tree (1-based) over sublist lengths, rebuilt in O(k) when stale."""
        tree = self._tree
        if tree is None:
            size = len(self._lists)
            tree = [0] * (size + 1)
            for i, sub in enumerate(self._lists, 1):
                tree[i] += len(sub)
                parent = i + (i & -i)
                if parent <= size:
                    tree[parent] += tree[i]
            self._tree = tree
        return tree

    def _adjust(self, index: int, delta: int) -> None:
        """Sublist `index` grew or shrank by `delta` keys."""
        tree = self._tree
        if tree is None:
            return
        i = index + 1
        size = len(tree) - 1
        while i <= size:
            tree[i] += delta
            i += i & -i

    def _offset(self, index: int) -> int:
        """How many keys the sublists before `index` hold."""
        if index == 0:
            return 0
        tree = self._fenwick()
        total = 0
        i = index
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def _locate(self, pos: int) -> tuple[int, int]:
        """(sublist, offset in it) of position `pos` (0 <= pos < len)."""
        first = len(self._lists[0])
        if pos < first:
            return 0, pos
        last_index = len(self._lists) - 1
        last_start = self._len - len(self._lists[last_index])
        if pos >= last_start:
            return last_index, pos - last_start
        tree = self._fenwick()
        size = len(tree) - 1
        index = 0
        step = 1 << (size.bit_length() - 1)
        while step:
            nxt = index + step
            if nxt <= size and tree[nxt] <= pos:
                index = nxt
                pos -= tree[nxt]
            step >>= 1
        return index, pos

    # --- changes -------------------------------------------------------------------------

    def add(self, key: Key) -> None:
        """Insert `key`, which must not be present."""
        lists, maxes = self._lists, self._maxes
        self._len += 1
        if not maxes:
            lists.append([key])
            maxes.append(key)
            self._tree = None
            return
        index = bisect_left(maxes, key)
        if index == len(maxes):
            index -= 1
            sub = lists[index]
            sub.append(key)
            maxes[index] = key
        else:
            sub = lists[index]
            insort(sub, key)
        if len(sub) > 2 * LOAD:
            lists[index : index + 1] = [sub[:LOAD], sub[LOAD:]]
            maxes[index : index + 1] = [sub[LOAD - 1], sub[-1]]
            self._tree = None
        else:
            self._adjust(index, 1)

    def replace(self, old: Key, new: Key) -> None:
        """Swap the present `old` for the absent `new` (a member's new score). When `new`
        sorts into the same sublist, that is two bisects and no bookkeeping of lengths."""
        lists, maxes = self._lists, self._maxes
        index = bisect_left(maxes, old)
        sub = lists[index]
        if (index == 0 or maxes[index - 1] < new) and (
            index + 1 == len(lists) or new < lists[index + 1][0]
        ):
            del sub[bisect_left(sub, old)]
            insort(sub, new)
            maxes[index] = sub[-1]
            return
        self._delete_at(index, bisect_left(sub, old))
        self.add(new)

    def remove(self, key: Key) -> None:
        """Delete `key`, which must be present."""
        index = bisect_left(self._maxes, key)
        sub = self._lists[index]
        self._delete_at(index, bisect_left(sub, key))

    def pop(self, pos: int) -> Key:
        """Remove and answer the key at `pos` (negative counts from the end)."""
        if pos < 0:
            pos += self._len
        index, offset = self._locate(pos)
        key = self._lists[index][offset]
        self._delete_at(index, offset)
        return key

    def _delete_at(self, index: int, offset: int) -> None:
        lists, maxes = self._lists, self._maxes
        sub = lists[index]
        del sub[offset]
        self._len -= 1
        if len(sub) > LOAD // 2:
            maxes[index] = sub[-1]
            self._adjust(index, -1)
        elif len(lists) > 1:
            self._merge_small(index)
        elif sub:
            maxes[index] = sub[-1]
            self._adjust(index, -1)
        else:
            lists.clear()
            maxes.clear()
            self._tree = None

    def _merge_small(self, index: int) -> None:
        """Join the undersized sublist `index` with a neighbour, splitting if too long."""
        lists, maxes = self._lists, self._maxes
        if index == 0:
            index = 1
        prev = lists[index - 1]
        prev.extend(lists[index])
        del lists[index]
        del maxes[index]
        if len(prev) > 2 * LOAD:
            half = len(prev) // 2
            lists[index - 1 : index] = [prev[:half], prev[half:]]
            maxes[index - 1 : index] = [prev[half - 1], prev[-1]]
        else:
            maxes[index - 1] = prev[-1]
        self._tree = None

    def delete_range(self, start: int, stop: int) -> list[Key]:
        """Remove the keys at positions [start, stop) and answer them, in order."""
        if start >= stop:
            return []
        if start == 0 and stop >= self._len:
            whole: list[Key] = list(self)
            self._lists, self._maxes, self._tree, self._len = [], [], None, 0
            return whole
        first, first_off = self._locate(start)
        removed: list[Key] = []
        index, offset = first, first_off
        remaining = min(stop, self._len) - start
        while remaining:
            sub = self._lists[index]
            take = min(remaining, len(sub) - offset)
            removed.extend(sub[offset : offset + take])
            del sub[offset : offset + take]
            remaining -= take
            index += 1
            offset = 0
        self._len -= len(removed)
        self._compact(first, index)
        return removed

    def _compact(self, lo: int, hi: int) -> None:
        """After a range deletion touched sublists [lo, hi): drop empty ones, refresh
        maxes, and merge an undersized survivor with its neighbour."""
        kept = [sub for sub in self._lists[lo:hi] if sub]
        self._lists[lo:hi] = kept
        self._maxes[lo:hi] = [sub[-1] for sub in kept]
        self._tree = None
        for index in range(lo + len(kept) - 1, lo - 1, -1):
            if len(self._lists) > 1 and index < len(self._lists):
                if len(self._lists[index]) <= LOAD // 2:
                    self._merge_small(index)

    # --- queries -------------------------------------------------------------------------

    def at(self, pos: int) -> Key:
        """The key at position `pos` (0 <= pos < len)."""
        index, offset = self._locate(pos)
        return self._lists[index][offset]

    def index(self, key: Key) -> int:
        """The position of `key`, which must be present."""
        index = bisect_left(self._maxes, key)
        return self._offset(index) + bisect_left(self._lists[index], key)

    def bisect(self, key: Key) -> int:
        """How many keys sort before `key`."""
        index = bisect_left(self._maxes, key)
        if index == len(self._maxes):
            return self._len
        return self._offset(index) + bisect_left(self._lists[index], key)

    def first_true(self, pred: Callable[[Key], bool]) -> int:
        """The first position whose key satisfies `pred` (False...False True...True
        along the order), or len when none does. O(log n) calls of `pred`."""
        maxes = self._maxes
        lo, hi = 0, len(maxes)
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(maxes[mid]):
                hi = mid
            else:
                lo = mid + 1
        if lo == len(maxes):
            return self._len
        sub = self._lists[lo]
        left, right = 0, len(sub) - 1  # pred holds at sub[-1] (its max)
        while left < right:
            mid = (left + right) // 2
            if pred(sub[mid]):
                right = mid
            else:
                left = mid + 1
        return self._offset(lo) + left

    def iter_from(self, pos: int, reverse: bool = False) -> Iterator[Key]:
        """Keys from position `pos` towards the end (or, reversed, towards the start)."""
        if not 0 <= pos < self._len:
            return
        index, offset = self._locate(pos)
        lists = self._lists
        if reverse:
            sub = lists[index]
            for j in range(offset, -1, -1):
                yield sub[j]
            for i in range(index - 1, -1, -1):
                yield from reversed(lists[i])
        else:
            yield from lists[index][offset:]
            for i in range(index + 1, len(lists)):
                yield from lists[i]

    def slice(self, start: int, stop: int, reverse: bool = False) -> list[Key]:
        """Keys at positions [start, stop), in order, or from stop-1 down to start: as
        many as `iter_from` would give from the first of them (none when it is out of
        range). Cut from the sublists, not iterated."""
        if stop <= start:
            return []
        if reverse:
            if not 0 <= stop - 1 < self._len:
                return []
            start = max(start, 0)
        else:
            if not 0 <= start < self._len:
                return []
            stop = min(stop, self._len)
        index, offset = self._locate(start)
        lists = self._lists
        want = stop - start
        out = lists[index][offset:offset + want]
        while len(out) < want:
            index += 1
            out += lists[index][:want - len(out)]
        if reverse:
            out.reverse()
        return out

    def scan_up(self, first: Key, past: Key | None, skip: int, count: int) -> list[Key] | None:
        """Keys from the first one >= `first` on, past `skip` of them, below `past` (None:
        no bound), at most `count` (negative: no cap), ascending: a score range read from
        where it starts, without positions. None when `skip` leaves the first sublist
        (the caller counts positions then)."""
        maxes = self._maxes
        i = bisect_left(maxes, first)
        if i == len(maxes):
            return []
        lists = self._lists
        sub = lists[i]
        j = bisect_left(sub, first) + skip
        if j >= len(sub):
            return None
        out: list[Key] = []
        last = len(lists) - 1
        while True:
            out += sub[j:] if count < 0 else sub[j : j + count - len(out)]
            if len(out) == count or i == last or (past is not None and maxes[i] >= past):
                break
            i += 1
            sub = lists[i]
            j = 0
        if past is not None and out and out[-1] >= past:
            del out[bisect_left(out, past):]
        return out

    def scan_down(self, past: Key | None, first: Key, skip: int, count: int) -> list[Key] | None:
        """`scan_up` reversed: keys below `past` (None: from the last), past `skip` of
        them, down to `first` included, at most `count`, descending."""
        lists = self._lists
        if not lists:
            return []
        i = len(lists) - 1
        j = len(lists[i]) - 1
        if past is not None:
            i = bisect_left(self._maxes, past)
            if i == len(lists):
                i -= 1
            else:
                j = bisect_left(lists[i], past) - 1
                if j < 0:
                    if i == 0:
                        return []
                    i -= 1
                j = len(lists[i]) - 1 if j < 0 else j
        j -= skip
        if j < 0:
            return None
        out: list[Key] = []
        while True:
            sub = lists[i]
            start = 0 if count < 0 else max(0, j + 1 - (count - len(out)))
            out += reversed(sub[start : j + 1])
            if len(out) == count or i == 0 or sub[0] < first:
                break
            i -= 1
            j = len(lists[i]) - 1
        if out and out[-1] < first:
            del out[bisect_left(out, True, key=lambda key: key < first):]
        return out

    def check(self) -> None:
        """Assert the internal invariants (for tests)."""
        flat = list(self)
        assert flat == sorted(flat) and len(set(flat)) == len(flat)
        assert len(flat) == self._len
        assert all(self._lists) and all(len(s) <= 2 * LOAD for s in self._lists)
        assert self._maxes == [s[-1] for s in self._lists]
        if self._tree is not None:
            sizes = [len(s) for s in self._lists]
            assert all(self._offset(i) == sum(sizes[:i]) for i in range(len(sizes)))


# --- ranges ------------------------------------------------------------------------------


class ScoreRange:
    """A score interval; `(` makes an end exclusive (zrangespec)."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo: float, hi: float, minex: bool = False, maxex: bool = False) -> None:
        self.min, self.max, self.minex, self.maxex = lo, hi, minex, maxex

    def empty(self) -> bool:
        return self.min > self.max or (self.min == self.max and (self.minex or self.maxex))

    def gte_min(self, key: Key) -> bool:
        return key[0] > self.min if self.minex else key[0] >= self.min

    def lte_max(self, key: Key) -> bool:
        return key[0] < self.max if self.maxex else key[0] <= self.max

    def first_key(self) -> Key | None:
        """The smallest key that is >= min (None: no key can be), for a C-speed bisect."""
        return _score_floor(self.min, above=self.minex)

    def past_key(self) -> Key | None:
        """The smallest key beyond max (None: no key can be)."""
        return _score_floor(self.max, above=not self.maxex)


def _score_floor(score: float, above: bool) -> Key | None:
    """The smallest key with a score >= `score` (or > it when `above`)."""
    if above:
        if score == math.inf:
            return None
        score = math.nextafter(score, math.inf)
    return (score, b"")


class _LexInfinity:
    """The `-` and `+` of a lex range: below and above every member."""

    __slots__ = ("sign",)

    def __init__(self, sign: int) -> None:
        self.sign = sign


LEX_MIN = _LexInfinity(-1)
LEX_MAX = _LexInfinity(1)
LexItem = bytes | _LexInfinity


def lex_compare(a: LexItem, b: LexItem) -> int:
    """sdscmplex: `-` and `+` are below/above any member; each equals only itself."""
    if a is b:
        return 0
    if a is LEX_MIN or b is LEX_MAX:
        return -1
    if a is LEX_MAX or b is LEX_MIN:
        return 1
    assert isinstance(a, bytes) and isinstance(b, bytes)
    return (a > b) - (a < b)


class LexRange:
    """A member interval for ZRANGEBYLEX and friends (zlexrangespec)."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo: LexItem, minex: bool, hi: LexItem, maxex: bool) -> None:
        self.min, self.max, self.minex, self.maxex = lo, hi, minex, maxex

    def empty(self) -> bool:
        cmp = lex_compare(self.min, self.max)
        return cmp > 0 or (cmp == 0 and (self.minex or self.maxex))

    def gte_min(self, key: Key) -> bool:
        cmp = lex_compare(key[1], self.min)
        return cmp > 0 if self.minex else cmp >= 0

    def lte_max(self, key: Key) -> bool:
        cmp = lex_compare(key[1], self.max)
        return cmp < 0 if self.maxex else cmp <= 0


Range = ScoreRange | LexRange


# --- the value -----------------------------------------------------------------------------


class ZLimits:
    """The listpack thresholds of `state.config`, read once per command. A plain class,
    not a dataclass: compiled, a dataclass's generated __init__ costs ten times more."""

    __slots__ = ("entries", "value")

    def __init__(self, entries: int, value: int) -> None:
        self.entries = entries
        self.value = value

    @classmethod
    def of(cls, state: Configured) -> ZLimits:
        config = state.config
        return cls(config["zset-max-listpack-entries"], config["zset-max-listpack-value"])

    def fit(self, count: int, longest: int) -> bool:
        """Whether `count` members, the longest `longest` bytes, stay a listpack."""
        return count <= self.entries and longest <= self.value


class ZSet:
    """A sorted set: member -> score, and the members in (score, member) order.

    Representation, known only here. A small listpack set is one packed `bytes`
    (`_packed`): its members in (score, member) order, each as its score (a big-endian
    double), a length byte and the member, scanned linearly as Valkey scans its listpack.
    Otherwise a dict (`_scores`) and `SortedKeys` (`_keys`) hold them: once a skiplist, or
    while still a listpack if it outgrows a linear scan (`PACKED_MAX_MEMBERS`, thresholds
    raised by CONFIG) or holds a member too long for its length byte. Never back. Queries over a range read a `SortedKeys` view: the live one, or one decoded
    from the packed bytes (a small set's few keys)."""

    TYPE_NAME = "zset"
    __slots__ = ("_packed", "_count", "_scores", "_keys", "skiplist", "scan_order")

    def __init__(self, skiplist: bool = False) -> None:
        self._packed: bytes | None = None if skiplist else b""  # None: the dict form
        self._count = 0  # the members in `_packed`
        self._scores: dict[bytes, float] | None = {} if skiplist else None
        self._keys: SortedKeys | None = SortedKeys() if skiplist else None
        self.skiplist = skiplist  # the encoding: listpack until converted, never back
        self.scan_order: list[bytes] | None = None  # ZSCAN's member order, per iteration

    @classmethod
    def create(cls, size_hint: int, longest: int, limits: ZLimits) -> ZSet:
        """An empty set sized for `size_hint` members (zsetTypeCreate)."""
        return cls(skiplist=not limits.fit(size_hint, longest))

    @classmethod
    def from_pairs(cls, pairs: list[Pair], limits: ZLimits) -> ZSet:
        """A set of distinct members, encoded as a stored result is (listpack if it fits)."""
        longest = max((len(m) for m, _ in pairs), default=0)
        zs = cls(skiplist=not limits.fit(len(pairs), longest))
        keys = sorted((zs._stored(score), member) for member, score in pairs)
        zs.load([(member, score) for score, member in keys])
        return zs

    def load(self, pairs: list[Pair]) -> None:
        """The content of an empty set: (member, score) pairs of distinct members, in the
        order its dict should keep (the packed form keeps the scores' order)."""
        keys = sorted([(score, member) for member, score in pairs])
        if self._packed is not None and self._packs(keys):
            self._packed = _encode(keys)
            self._count = len(keys)
            return
        self._to_dict_form()
        self._keys = SortedKeys(keys)
        self._scores = dict(pairs)

    def __len__(self) -> int:
        scores = self._scores
        return self._count if scores is None else len(scores)

    def __contains__(self, member: object) -> bool:
        packed = self._packed
        if packed is None:
            scores = self._scores
            return scores is not None and member in scores
        return isinstance(member, bytes) and _find_member(packed, member) >= 0

    def copy(self) -> ZSet:
        clone = ZSet(self.skiplist)
        clone._packed = self._packed  # immutable: shared
        clone._count = self._count
        scores, keys = self._scores, self._keys
        clone._scores = None if scores is None else dict(scores)
        clone._keys = None if keys is None else keys.copy()
        return clone

    def encoding(self, state: Configured | None = None) -> bytes:
        return b"skiplist" if self.skiplist else b"listpack"

    def is_packed(self) -> bool:
        """Whether the members are held in the packed form (tests)."""
        return self._packed is not None

    def members(self) -> list[bytes]:
        """The members: in score order when packed, else in the dict's order (the one a
        skiplist's dict is walked in)."""
        scores = self._scores
        if scores is None:
            return [member for _, member in _decode(self._packed or b"")]
        return list(scores)

    def items(self) -> list[Pair]:
        """(member, score) pairs, in the order `members` gives."""
        scores = self._scores
        if scores is None:
            return [(member, score) for score, member in _decode(self._packed or b"")]
        return list(scores.items())

    def mapping(self) -> Mapping[bytes, float]:
        """Member -> score to read at once: the live dict (no copy), or a new one from
        the packed form; not to be kept across writes."""
        scores = self._scores
        return dict(self.items()) if scores is None else scores

    def sorted_keys(self) -> SortedKeys:
        """The (score, member) order to read: the live one, or a copy decoded from the
        packed form; never to be changed."""
        keys = self._keys
        return SortedKeys(_decode(self._packed or b"")) if keys is None else keys

    # --- encoding ------------------------------------------------------------------------

    def grow_for(self, size_hint: int, longest: int, limits: ZLimits) -> None:
        """zsetTypeMaybeConvert: a listpack about to take this much becomes a skiplist."""
        if not self.skiplist and not limits.fit(size_hint, longest):
            self.to_skiplist()

    def to_skiplist(self) -> None:
        """Convert to the skiplist encoding (once; never back)."""
        self.skiplist = True
        self._to_dict_form()

    def _to_dict_form(self) -> None:
        packed = self._packed
        if packed is not None:
            keys = _decode(packed)
            self._keys = SortedKeys(keys)
            self._scores = {member: score for score, member in keys}
            self._packed = None
            self._count = 0

    def _packs(self, keys: list[Key]) -> bool:
        """Whether these keys fit the packed form."""
        return len(keys) <= PACKED_MAX_MEMBERS and all(len(m) <= PACKED_MAX_ITEM for _, m in keys)

    def _stored(self, score: float) -> float:
        """The score as the encoding keeps it: a listpack stores -0 as the integer 0."""
        if score == 0 and not self.skiplist:
            return 0.0
        return score

    # --- members -------------------------------------------------------------------------

    def score(self, member: bytes) -> float | None:
        packed = self._packed
        if packed is None:
            scores = self._scores
            return None if scores is None else scores.get(member)
        pos = _find_member(packed, member)
        return None if pos < 0 else _score_at(packed, pos)

    def insert(self, member: bytes, score: float, limits: ZLimits | None) -> None:
        """Add a member that is not present (converting a listpack that outgrows itself);
        `limits` may be None once the set is a skiplist (it never converts back)."""
        if not self.skiplist:
            assert limits is not None
            if not limits.fit(len(self) + 1, len(member)):
                self.to_skiplist()
            elif score == 0:
                score = 0.0  # a listpack stores -0 as the integer 0
        packed = self._packed
        if packed is not None:
            if self._count < PACKED_MAX_MEMBERS and len(member) <= PACKED_MAX_ITEM:
                self._packed = _inserted(packed, score, member)
                self._count += 1
                return
            self._to_dict_form()
        scores, keys = self._scores, self._keys
        assert scores is not None and keys is not None
        scores[member] = score
        keys.add((score, member))

    def update(self, member: bytes, score: float) -> None:
        """Give a present member a new score."""
        if score == 0 and not self.skiplist:
            score = 0.0
        packed = self._packed
        if packed is not None:
            pos = _find_member(packed, member)
            self._packed = _inserted(packed[:pos] + packed[pos + 9 + len(member):], score, member)
            return
        scores, keys = self._scores, self._keys
        assert scores is not None and keys is not None
        keys.replace((scores[member], member), (score, member))
        scores[member] = score

    def remove(self, member: bytes) -> bool:
        packed = self._packed
        if packed is not None:
            pos = _find_member(packed, member)
            if pos < 0:
                return False
            self._packed = packed[:pos] + packed[pos + 9 + len(member):]
            self._count -= 1
            return True
        scores, keys = self._scores, self._keys
        assert scores is not None and keys is not None
        score = scores.pop(member, None)
        if score is None:
            return False
        keys.remove((score, member))
        return True

    def rank(self, member: bytes, reverse: bool = False) -> int | None:
        packed = self._packed
        if packed is not None:
            pos = _rank_in(packed, member)
            if pos is None:
                return None
        else:
            scores, keys = self._scores, self._keys
            assert scores is not None and keys is not None
            score = scores.get(member)
            if score is None:
                return None
            pos = keys.index((score, member))
        return len(self) - 1 - pos if reverse else pos

    def pop(self, count: int, from_max: bool) -> list[Pair]:
        """Remove up to `count` members from the low (or high) end, in pop order."""
        packed = self._packed
        if packed is not None:
            keys = _decode(packed)
            take = min(count, len(keys))
            if from_max:
                taken, keys = keys[len(keys) - take:][::-1], keys[:len(keys) - take]
            else:
                taken, keys = keys[:take], keys[take:]
            self._packed = _encode(keys)
            self._count = len(keys)
            return [(member, score) for score, member in taken]
        out: list[Pair] = []
        sorted_keys, scores = self._keys, self._scores
        assert sorted_keys is not None and scores is not None
        for _ in range(min(count, len(scores))):
            score, member = sorted_keys.pop(-1 if from_max else 0)
            del scores[member]
            out.append((member, score))
        return out

    def pairs(self, start: int = 0, stop: int | None = None, reverse: bool = False) -> list[Pair]:
        """(member, score) at positions [start, stop), forward or from stop-1 down."""
        if stop is None:
            stop = len(self)
        return [(m, s) for s, m in self.sorted_keys().slice(start, stop, reverse)]

    def delete_positions(self, start: int, stop: int) -> int:
        """Remove the members at positions [start, stop); answers how many."""
        packed = self._packed
        if packed is not None:
            if start >= stop:
                return 0
            keys = _decode(packed)
            removed = len(keys[start:stop])
            del keys[start:stop]
            self._packed = _encode(keys)
            self._count = len(keys)
            return removed
        sorted_keys, scores = self._keys, self._scores
        assert sorted_keys is not None and scores is not None
        removed_keys = sorted_keys.delete_range(start, stop)
        for _, member in removed_keys:
            del scores[member]
        return len(removed_keys)

    def random_pairs(self, count: int) -> list[Pair]:
        """`count` members picked independently (repeats possible), in pick order."""
        size = len(self)
        at = self.sorted_keys().at
        picks = (at(random.randrange(size)) for _ in range(count))
        return [(m, s) for s, m in picks]

    def random_distinct(self, count: int) -> list[Pair]:
        """`count` < len distinct members: a listpack answers them in set order (Valkey's
        lpRandomPairsUnique), a skiplist in random order."""
        positions = random.sample(range(len(self)), count)
        if not self.skiplist:
            positions.sort()
        at = self.sorted_keys().at
        return [(m, s) for s, m in (at(p) for p in positions)]

    # --- ranges --------------------------------------------------------------------------

    def _linear(self, rng: Range) -> bool:
        """Whether Valkey walks this range member by member: a listpack does for lex
        ranges, which matters only when the scores differ (the order is then not by
        member). Score ranges are monotone, so a search answers the same."""
        return not self.skiplist and isinstance(rng, LexRange)

    def _count_below(self, keys: SortedKeys, rng: Range) -> int:
        """How many keys sort before the range's min (the search a skiplist does)."""
        if isinstance(rng, ScoreRange):
            key = rng.first_key()
            return len(keys) if key is None else keys.bisect(key)
        return keys.first_true(rng.gte_min)

    def _count_through(self, keys: SortedKeys, rng: Range) -> int:
        """How many keys sort before the first key beyond the range's max."""
        if isinstance(rng, ScoreRange):
            key = rng.past_key()
            return len(keys) if key is None else keys.bisect(key)
        return keys.first_true(lambda key: not rng.lte_max(key))

    def _in_range_at_all(self, keys: SortedKeys, rng: Range) -> bool:
        """zslIsInRange/zzlIsInRange: not empty, the last key >= min, the first <= max."""
        return (
            len(keys) > 0 and not rng.empty()
            and rng.gte_min(keys.at(len(keys) - 1)) and rng.lte_max(keys.at(0))
        )

    def _first_in_range(self, keys: SortedKeys, rng: Range) -> int | None:
        """Position of the first key in range (zzlFirstInRange / zslNthInRange(0))."""
        if not self._in_range_at_all(keys, rng):
            return None
        if self._linear(rng):
            pos = next((i for i, key in enumerate(keys) if rng.gte_min(key)), len(keys))
        else:
            pos = self._count_below(keys, rng)
        if pos == len(keys) or not rng.lte_max(keys.at(pos)):
            return None
        return pos

    def _last_in_range(self, keys: SortedKeys, rng: Range) -> int | None:
        """Position of the last key in range (zzlLastInRange / zslNthInRange(-1))."""
        if not self._in_range_at_all(keys, rng):
            return None
        if self._linear(rng):
            pos = next(
                (len(keys) - 1 - i for i, key in enumerate(keys.iter_from(len(keys) - 1, True))
                 if rng.lte_max(key)),
                -1,
            )
        else:
            pos = self._count_through(keys, rng) - 1
        if pos < 0 or not rng.gte_min(keys.at(pos)):
            return None
        return pos

    def _nth_in_range(self, keys: SortedKeys, rng: Range, n: int) -> int | None:
        """zslNthInRange: the n-th key in range (a negative n counts from its end)."""
        if not self._in_range_at_all(keys, rng):
            return None
        if n >= 0:
            pos = self._count_below(keys, rng) + n
            if pos >= len(keys) or not rng.lte_max(keys.at(pos)):
                return None
        else:
            pos = self._count_through(keys, rng) + n
            if pos < 0 or not rng.gte_min(keys.at(pos)):
                return None
        return pos

    def _score_positions(self, keys: SortedKeys, rng: ScoreRange) -> tuple[int, int]:
        """(lo, hi): the keys within `rng` are at positions [lo, hi) (none when hi <= lo)."""
        first, past = rng.first_key(), rng.past_key()
        lo = len(keys) if first is None else keys.bisect(first)
        hi = len(keys) if past is None else keys.bisect(past)
        return lo, hi

    def range_by_score(self, rng: ScoreRange, offset: int, limit: int, reverse: bool) -> list[Key]:
        """`range_query` for a score range, from two searches: the keys in reply order.
        A listpack steps `offset` keys from the first (last) key in range, so a negative
        offset finds nothing; a skiplist seeks the offset-th key in range, a negative
        offset counting from the far end of it. A negative limit means no limit."""
        if limit == 0 or (offset < 0 and not self.skiplist):
            return []
        keys = self.sorted_keys()
        if offset >= 0:  # the common case: read from where the range starts (ends)
            first = rng.first_key()
            if first is None:
                return []
            past = rng.past_key()
            if reverse:
                found = keys.scan_down(past, first, offset, limit)
            else:
                found = keys.scan_up(first, past, offset, limit)
            if found is not None:
                return found
        lo, hi = self._score_positions(keys, rng)
        if hi <= lo:
            return []
        if reverse:
            start = hi - 1 - offset if offset >= 0 else lo - offset - 1
            if not lo <= start < hi:
                return []
            return keys.slice(lo if limit < 0 else max(lo, start - limit + 1), start + 1, True)
        start = lo + offset if offset >= 0 else hi + offset
        if not lo <= start < hi:
            return []
        return keys.slice(start, hi if limit < 0 else min(hi, start + limit))

    def range_query(self, rng: Range, offset: int, limit: int, reverse: bool) -> list[Pair]:
        """ZRANGEBYSCORE/ZRANGEBYLEX with LIMIT as Valkey walks it. A listpack steps
        `offset` keys from the first (last) key in range, so a negative offset finds
        nothing; a skiplist seeks the offset-th key in range, where a negative offset
        counts from the far end of the range. A negative limit means no limit."""
        if isinstance(rng, ScoreRange):
            return [(key[1], key[0]) for key in self.range_by_score(rng, offset, limit, reverse)]
        keys = self.sorted_keys()
        if self.skiplist:
            start = self._nth_in_range(keys, rng, -offset - 1 if reverse else offset)
        else:
            start = self._last_in_range(keys, rng) if reverse else self._first_in_range(keys, rng)
            if start is not None:
                start = start - offset if reverse else start + offset
                if offset < 0 or not 0 <= start < len(keys):
                    start = None
        if start is None or limit == 0:
            return []
        inside = rng.gte_min if reverse else rng.lte_max
        out: list[Pair] = []
        for key in keys.iter_from(start, reverse):
            if not inside(key):
                break
            out.append((key[1], key[0]))
            if len(out) == limit:
                break
        return out

    def count_range(self, rng: Range) -> int:
        """ZCOUNT/ZLEXCOUNT."""
        keys = self.sorted_keys()
        if isinstance(rng, ScoreRange):  # monotone: the two searches answer it
            return max(0, self._count_through(keys, rng) - self._count_below(keys, rng))
        if self._linear(rng):
            first = self._first_in_range(keys, rng)
            if first is None:
                return 0
            count = 0
            for key in keys.iter_from(first):
                if not rng.lte_max(key):
                    break
                count += 1
            return count
        first = self._nth_in_range(keys, rng, 0)
        if first is None:
            return 0
        last = self._nth_in_range(keys, rng, -1)
        return (last if last is not None else len(keys) - 1) - first + 1

    def delete_range(self, rng: Range) -> int:
        """ZREMRANGEBYSCORE/ZREMRANGEBYLEX: from the first key in range (a skiplist seeks
        it without the listpack's up-front checks), delete while keys stay <= max."""
        keys = self.sorted_keys()
        if self.skiplist or not isinstance(rng, LexRange):
            start = self._count_below(keys, rng)
        else:
            first = self._first_in_range(keys, rng)
            if first is None:
                return 0
            start = first
        stop = start
        for key in keys.iter_from(start):
            if not rng.lte_max(key):
                break
            stop += 1
        return self.delete_positions(start, stop)

    def check(self) -> None:
        """Assert the invariants between the dict and the order (for tests)."""
        keys = self.sorted_keys()
        keys.check()
        pairs = self.items()
        assert len(keys) == len(pairs) == len(self)
        scores = dict(pairs)
        assert all(scores[m] == s for s, m in keys)
        if not self.skiplist:
            assert all(str(s) != "-0.0" for s in scores.values())
        packed = self._packed
        if packed is not None:
            assert self._scores is None and self._keys is None and _decode(packed) == list(keys)


# --- helpers of the packed form ---------------------------------------------------------------

PACKED_MAX_MEMBERS: Final = 128
PACKED_MAX_ITEM: Final = MAX_ITEM
_LENGTH: Final = LENGTH_BYTE  # read per write: a Final name, not a module lookup
_DOUBLE: Final = struct.Struct(">d")
_pack_double: Final = _DOUBLE.pack
_unpack_double: Final = _DOUBLE.unpack_from


def _score_at(packed: bytes, pos: int) -> float:
    """The score of the entry at `pos`: one unpack, the double as stored."""
    score: float = _unpack_double(packed, pos)[0]
    return score


def _find_member(packed: bytes, member: bytes) -> int:
    """Where the member's entry starts (its score), or -1."""
    size = len(member)
    last = member[size - 1] if size else 0
    pos = 0
    end = len(packed)
    while pos < end:
        length = packed[pos + 8]
        if length == size and (size == 0 or packed[pos + 8 + size] == last) and \
                packed[pos + 9:pos + 9 + size] == member:
            return pos
        pos += 9 + length
    return -1


def _rank_in(packed: bytes, member: bytes) -> int | None:
    """The member's position in the order, or None."""
    pos = _find_member(packed, member)
    if pos < 0:
        return None
    rank = 0
    at = 0
    while at < pos:
        at += 9 + packed[at + 8]
        rank += 1
    return rank


def _inserted(packed: bytes, score: float, member: bytes) -> bytes:
    """The packed set with (score, member) added in its place: after every key that
    compares lower as a (score, member) tuple does (-0 equal to 0)."""
    pos = 0
    end = len(packed)
    while pos < end:
        length = packed[pos + 8]
        here = _score_at(packed, pos)
        if here > score or (here == score and packed[pos + 9:pos + 9 + length] > member):
            break
        pos += 9 + length
    return b"".join((packed[:pos], _pack_double(score), _LENGTH[len(member)], member, packed[pos:]))


def _decode(packed: bytes) -> list[Key]:
    keys: list[Key] = []
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 9 + packed[pos + 8]
        keys.append((_score_at(packed, pos), packed[pos + 9:at]))
        pos = at
    return keys


def _encode(keys: list[Key]) -> bytes:
    length = _LENGTH
    return b"".join([part for score, member in keys
                     for part in (_pack_double(score), length[len(member)], member)])
