"""The sorted-set type: a dict member -> score plus an order-statistic sorted list.

Order is Valkey's: by score, then by member byte-wise (memcmp, a shorter prefix first),
which is exactly how Python compares `(score, member)` tuples of a float and bytes.
NaN is never stored, and -0.0 compares equal to 0.0 as in C.

`SortedKeys` keeps the `(score, member)` keys in sorted sublists of at most `2 * LOAD`
keys each, every sublist two columns side by side (its scores, its members: no tuple per
key), with the last key of every sublist in `_max_scores`/`_max_members` and a Fenwick
tree over the sublist lengths for positions. With k = n / LOAD sublists:

- insert, delete: O(log n) comparisons plus an O(LOAD) shift inside one sublist (a new
  score that keeps the member's place only replaces the score); a split or merge (every
  ~LOAD changes) rebuilds the Fenwick tree in O(k);
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
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

from fakekey.types.packed import LENGTH_BYTE, MAX_ITEM

if TYPE_CHECKING:
    from fakekey.types.value import Configured

# held as a constant: compiled code calls it without a module lookup
_bisect_members: Final = bisect_left

Key = tuple[float, bytes]
Pair = tuple[bytes, float]

# sublist target size; a sublist splits past 2 * LOAD, merges under LOAD / 2. Small: an
# insert or delete shifts the rest of its sublist one slot, in two columns.
LOAD = 256  # not Final: tests patch it


def _score_bisect(scores: list[float], score: float, lo: int = 0, hi: int = -1) -> int:
    """bisect_left over a column of scores (up to `hi`; -1: its end): a loop compiled to
    native float comparisons, several times cheaper than the bisect module's generic ones."""
    if hi < 0:
        hi = len(scores)
    while lo < hi:
        mid = (lo + hi) >> 1
        if scores[mid] < score:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _score_bisect_right(scores: list[float], score: float, lo: int) -> int:
    """bisect_right over a column of scores, from `lo`."""
    hi = len(scores)
    while lo < hi:
        mid = (lo + hi) >> 1
        if score < scores[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _member_place(scores: list[float], members: list[bytes], at: int, score: float, member: bytes) -> int:
    """Where `member` goes among the members whose score is `score`, from `at`, the first
    of them: one comparison when that score is unique (the common case), else a bisect."""
    after = at + 1
    if after == len(scores) or scores[after] != score:
        return after if members[at] < member else at
    return _bisect_members(members, member, at, _score_bisect_right(scores, score, after))


def _before(score: float, member: bytes, other_score: float, other_member: bytes) -> bool:
    """Whether the key (score, member) sorts before (other_score, other_member)."""
    return score < other_score or (score == other_score and member < other_member)


class SortedKeys:
    """A sorted list of keys with O(log n) insert, delete, rank and positional access.

    Held as columns, not as `(score, member)` tuples: each sublist is a list of scores
    and a list of members side by side (the score objects are the ones the set's dict
    holds), which saves a tuple (64 bytes) a member, and a key is found by bisecting
    floats, then the members that share its score. The queries still answer `Key`
    tuples, made only for what they answer."""

    __slots__ = ("_scores", "_members", "_max_scores", "_max_members", "_tree", "_len")

    def __init__(self, keys: list[Key] | None = None) -> None:
        """`keys`, when given, must already be sorted and free of duplicates."""
        self._scores: list[list[float]] = []  # sublist by sublist: its scores ...
        self._members: list[list[bytes]] = []  # ... and its members, in key order
        self._max_scores: list[float] = []  # the last key of each sublist: its score ...
        self._max_members: list[bytes] = []  # ... and its member
        self._tree: list[int] | None = None  # Fenwick tree over sublist lengths; None = stale
        self._len = 0
        if keys:
            self._fill([key[0] for key in keys], [key[1] for key in keys])

    @classmethod
    def from_columns(cls, scores: list[float], members: list[bytes]) -> SortedKeys:
        """The keys (scores[i], members[i]), already sorted and distinct."""
        made = cls()
        if scores:
            made._fill(scores, members)
        return made

    def _fill(self, scores: list[float], members: list[bytes]) -> None:
        for i in range(0, len(scores), LOAD):
            self._scores.append(scores[i : i + LOAD])
            self._members.append(members[i : i + LOAD])
        self._max_scores = [sub[-1] for sub in self._scores]
        self._max_members = [sub[-1] for sub in self._members]
        self._len = len(scores)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Key]:
        members = self._members
        for i, scores in enumerate(self._scores):
            yield from zip(scores, members[i])

    def copy(self) -> SortedKeys:
        clone = SortedKeys()
        clone._scores = [list(sub) for sub in self._scores]
        clone._members = [list(sub) for sub in self._members]
        clone._max_scores = list(self._max_scores)
        clone._max_members = list(self._max_members)
        clone._len = self._len
        return clone

    # --- the positional index ----------------------------------------------------------

    def _fenwick(self) -> list[int]:
        """The Fenwick tree (1-based) over sublist lengths, rebuilt in O(k) when stale."""
        tree = self._tree
        if tree is None:
            size = len(self._scores)
            tree = [0] * (size + 1)
            for i, sub in enumerate(self._scores, 1):
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
        first = len(self._scores[0])
        if pos < first:
            return 0, pos
        last_index = len(self._scores) - 1
        last_start = self._len - len(self._scores[last_index])
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

    # --- finding a key -------------------------------------------------------------------

    def _sublist(self, score: float, member: bytes) -> int:
        """The sublist a key falls in: the first whose last key is not below it (the
        number of sublists when it sorts after them all)."""
        max_scores = self._max_scores
        index = _score_bisect(max_scores, score)
        if index < len(max_scores) and max_scores[index] == score:
            index = _member_place(max_scores, self._max_members, index, score, member)
        return index

    def _place(self, index: int, score: float, member: bytes) -> int:
        """How many keys of sublist `index` sort before (score, member): a bisect of the
        scores, then of the members that share the score, if any do."""
        scores = self._scores[index]
        at = _score_bisect(scores, score)
        if at < len(scores) and scores[at] == score:
            at = _member_place(scores, self._members[index], at, score, member)
        return at

    def _fits(self, index: int, score: float, member: bytes) -> bool:
        """Whether the key sorts after sublist index-1's keys and before index+1's."""
        if index and not _before(self._max_scores[index - 1], self._max_members[index - 1], score, member):
            return False
        return index + 1 == len(self._scores) or _before(
            score, member, self._scores[index + 1][0], self._members[index + 1][0])

    def _new_max(self, index: int) -> None:
        self._max_scores[index] = self._scores[index][-1]
        self._max_members[index] = self._members[index][-1]

    def _key_at(self, index: int, offset: int) -> Key:
        return (self._scores[index][offset], self._members[index][offset])

    # --- changes -------------------------------------------------------------------------

    def insert(self, score: float, member: bytes) -> None:
        """Insert the key (score, member), which must not be present."""
        all_scores = self._scores
        self._len += 1
        if not all_scores:
            all_scores.append([score])
            self._members.append([member])
            self._max_scores.append(score)
            self._max_members.append(member)
            self._tree = None
            return
        index = self._sublist(score, member)
        if index == len(all_scores):  # past the last key: the end of the last sublist
            index -= 1
            scores, members = all_scores[index], self._members[index]
            scores.append(score)
            members.append(member)
            self._max_scores[index] = score
            self._max_members[index] = member
        else:
            scores, members = all_scores[index], self._members[index]
            at = self._place(index, score, member)
            scores.insert(at, score)
            members.insert(at, member)
        if len(scores) > 2 * LOAD:
            self._split(index)
        else:
            self._adjust(index, 1)

    def _split(self, index: int) -> None:
        """Cut the oversized sublist `index` in two."""
        scores, members = self._scores[index], self._members[index]
        self._scores[index : index + 1] = [scores[:LOAD], scores[LOAD:]]
        self._members[index : index + 1] = [members[:LOAD], members[LOAD:]]
        self._max_scores[index : index + 1] = [scores[LOAD - 1], scores[-1]]
        self._max_members[index : index + 1] = [members[LOAD - 1], members[-1]]
        self._tree = None

    def move(self, member: bytes, old: float, new: float) -> None:
        """Give the present key (old, member) the score `new` (absent with it). A key
        that keeps its sublist changes no length: only its score is replaced when it
        keeps its place, else it moves within the sublist."""
        index = self._sublist(old, member)
        scores, members = self._scores[index], self._members[index]
        at = self._place(index, old, member)
        last = len(scores) - 1
        if (at == 0 or _before(scores[at - 1], members[at - 1], new, member)) and (
                at == last or _before(new, member, scores[at + 1], members[at + 1])):
            if (at and at < last) or self._fits(index, new, member):  # its place, whatever the score
                scores[at] = new
                if at == last:
                    self._max_scores[index] = new
                return
        elif self._fits(index, new, member):
            scores.pop(at)
            members.pop(at)
            to = self._place(index, new, member)
            scores.insert(to, new)
            members.insert(to, member)
            if at == last or to == last:
                self._new_max(index)
            return
        self._delete_at(index, at)
        self.insert(new, member)

    def remove(self, score: float, member: bytes) -> None:
        """Delete the key (score, member), which must be present."""
        index = self._sublist(score, member)
        self._delete_at(index, self._place(index, score, member))

    def pop(self, pos: int) -> Key:
        """Remove and answer the key at `pos` (negative counts from the end)."""
        if pos < 0:
            pos += self._len
        index, offset = self._locate(pos)
        key = self._key_at(index, offset)
        self._delete_at(index, offset)
        return key

    def _delete_at(self, index: int, offset: int) -> None:
        scores, members = self._scores[index], self._members[index]
        scores.pop(offset)  # compiled, cheaper than `del` (a generic item deletion)
        members.pop(offset)
        self._len -= 1
        if len(scores) > LOAD // 2 or (scores and len(self._scores) == 1):
            if offset == len(scores):  # the last key went: a new max
                self._new_max(index)
            self._adjust(index, -1)
        elif len(self._scores) > 1:
            self._merge_small(index)
        else:
            self._scores.clear()
            self._members.clear()
            self._max_scores.clear()
            self._max_members.clear()
            self._tree = None

    def _merge_small(self, index: int) -> None:
        """Join the undersized sublist `index` with a neighbour, splitting if too long."""
        if index == 0:
            index = 1
        all_scores, all_members = self._scores, self._members
        all_scores[index - 1].extend(all_scores[index])
        all_members[index - 1].extend(all_members[index])
        del all_scores[index]
        del all_members[index]
        del self._max_scores[index]
        del self._max_members[index]
        if len(all_scores[index - 1]) > 2 * LOAD:
            self._split(index - 1)
        else:
            self._new_max(index - 1)
        self._tree = None

    def delete_range(self, start: int, stop: int) -> list[bytes]:
        """Remove the keys at positions [start, stop) and answer their members, in order."""
        if start >= stop:
            return []
        if start == 0 and stop >= self._len:
            whole = [member for members in self._members for member in members]
            self._scores, self._members, self._tree, self._len = [], [], None, 0
            self._max_scores, self._max_members = [], []
            return whole
        first, first_off = self._locate(start)
        removed: list[bytes] = []
        index, offset = first, first_off
        remaining = min(stop, self._len) - start
        while remaining:
            scores, members = self._scores[index], self._members[index]
            take = min(remaining, len(scores) - offset)
            removed += members[offset : offset + take]
            del scores[offset : offset + take]
            del members[offset : offset + take]
            remaining -= take
            index += 1
            offset = 0
        self._len -= len(removed)
        self._compact(first, index)
        return removed

    def _compact(self, lo: int, hi: int) -> None:
        """After a range deletion touched sublists [lo, hi): drop empty ones, refresh
        maxes, and merge an undersized survivor with its neighbour."""
        kept = [i for i in range(lo, hi) if self._scores[i]]
        scores = [self._scores[i] for i in kept]
        members = [self._members[i] for i in kept]
        self._scores[lo:hi] = scores
        self._members[lo:hi] = members
        self._max_scores[lo:hi] = [sub[-1] for sub in scores]
        self._max_members[lo:hi] = [sub[-1] for sub in members]
        self._tree = None
        for index in range(lo + len(kept) - 1, lo - 1, -1):
            if len(self._scores) > 1 and index < len(self._scores):
                if len(self._scores[index]) <= LOAD // 2:
                    self._merge_small(index)

    # --- queries -------------------------------------------------------------------------

    def at(self, pos: int) -> Key:
        """The key at position `pos` (0 <= pos < len)."""
        index, offset = self._locate(pos)
        return self._key_at(index, offset)

    def index(self, key: Key) -> int:
        """The position of `key`, which must be present."""
        index = self._sublist(key[0], key[1])
        return self._offset(index) + self._place(index, key[0], key[1])

    def bisect(self, key: Key) -> int:
        """How many keys sort before `key`."""
        index = self._sublist(key[0], key[1])
        if index == len(self._scores):
            return self._len
        return self._offset(index) + self._place(index, key[0], key[1])

    def below_score(self, score: float) -> int:
        """How many keys have a score below `score`."""
        index = _score_bisect(self._max_scores, score)
        if index == len(self._scores):
            return self._len
        return self._offset(index) + _score_bisect(self._scores[index], score)

    def first_true(self, pred: Callable[[Key], bool]) -> int:
        """The first position whose key satisfies `pred` (False...False True...True
        along the order), or len when none does. O(log n) calls of `pred`."""
        max_scores, max_members = self._max_scores, self._max_members
        lo, hi = 0, len(max_scores)
        while lo < hi:
            mid = (lo + hi) // 2
            if pred((max_scores[mid], max_members[mid])):
                hi = mid
            else:
                lo = mid + 1
        if lo == len(max_scores):
            return self._len
        scores, members = self._scores[lo], self._members[lo]
        left, right = 0, len(scores) - 1  # pred holds at the sublist's last key (its max)
        while left < right:
            mid = (left + right) // 2
            if pred((scores[mid], members[mid])):
                right = mid
            else:
                left = mid + 1
        return self._offset(lo) + left

    def iter_from(self, pos: int, reverse: bool = False) -> Iterator[Key]:
        """Keys from position `pos` towards the end (or, reversed, towards the start)."""
        if not 0 <= pos < self._len:
            return
        index, offset = self._locate(pos)
        all_scores, all_members = self._scores, self._members
        if reverse:
            scores, members = all_scores[index], all_members[index]
            for j in range(offset, -1, -1):
                yield (scores[j], members[j])
            for i in range(index - 1, -1, -1):
                yield from zip(reversed(all_scores[i]), reversed(all_members[i]))
        else:
            yield from zip(all_scores[index][offset:], all_members[index][offset:])
            for i in range(index + 1, len(all_scores)):
                yield from zip(all_scores[i], all_members[i])

    def slice(self, start: int, stop: int, reverse: bool = False) -> list[Key]:
        """Keys at positions [start, stop), in order, or from stop-1 down to start: as
        many as `iter_from` would give from the first of them (none when it is out of
        range). Cut from the sublists, not iterated."""
        scores, members = self.columns(start, stop, reverse)
        return list(zip(scores, members))

    def columns(self, start: int, stop: int, reverse: bool = False) -> tuple[list[float], list[bytes]]:
        """`slice`'s keys as two lists: their scores and their members."""
        if stop <= start:
            return [], []
        if reverse:
            if not 0 <= stop - 1 < self._len:
                return [], []
            start = max(start, 0)
        else:
            if not 0 <= start < self._len:
                return [], []
            stop = min(stop, self._len)
        index, offset = self._locate(start)
        all_scores, all_members = self._scores, self._members
        want = stop - start
        scores = all_scores[index][offset : offset + want]
        members = all_members[index][offset : offset + want]
        while len(scores) < want:
            index += 1
            more = want - len(scores)
            scores += all_scores[index][:more]
            members += all_members[index][:more]
        if reverse:
            scores.reverse()
            members.reverse()
        return scores, members

    def scan_up(self, first: float, past: float | None, skip: int, count: int) -> list[int] | None:
        """The keys scored `first` or more and below `past` (None: no bound), past `skip`
        of them, at most `count` (negative: no cap), ascending: a score range read from
        where it starts, without positions. Answers runs of the columns, [sublist, start,
        stop, ...] (`gather` reads them); None when `skip` leaves the first sublist (the
        caller counts positions then)."""
        all_scores = self._scores
        i = _score_bisect(self._max_scores, first)
        if i == len(all_scores):
            return []
        scores = all_scores[i]
        j = _score_bisect(scores, first) + skip
        if j >= len(scores):
            return None
        runs: list[int] = []
        last = len(all_scores) - 1
        taken = 0
        while True:
            stop = len(scores) if count < 0 else min(len(scores), j + count - taken)
            if past is not None and scores[stop - 1] >= past:
                stop = _score_bisect(scores, past, j, stop)
                if stop > j:
                    runs += (i, j, stop)
                break
            runs += (i, j, stop)
            taken += stop - j
            if taken == count or i == last:
                break
            i += 1
            scores = all_scores[i]
            j = 0
        return runs

    def scan_down(self, past: float | None, first: float, skip: int, count: int) -> list[int] | None:
        """`scan_up` reversed: the keys scored below `past` (None: from the last), past
        `skip` of them, down to the score `first` included, at most `count`, descending:
        runs [sublist, start, stop, ...], each read from stop-1 down to start."""
        all_scores = self._scores
        if not all_scores:
            return []
        i = len(all_scores) - 1
        j = len(all_scores[i]) - 1
        if past is not None:
            i = _score_bisect(self._max_scores, past)
            if i == len(all_scores):
                i -= 1
            else:
                j = _score_bisect(all_scores[i], past) - 1
                if j < 0:
                    if i == 0:
                        return []
                    i -= 1
                j = len(all_scores[i]) - 1 if j < 0 else j
        j -= skip
        if j < 0:
            return None
        runs: list[int] = []
        taken = 0
        while True:
            scores = all_scores[i]
            start = 0 if count < 0 else max(0, j + 1 - (count - taken))
            if scores[start] < first:
                start = _score_bisect(scores, first, start, j + 1)
                if start <= j:
                    runs += (i, start, j + 1)
                break
            runs += (i, start, j + 1)
            taken += j + 1 - start
            if taken == count or i == 0:
                break
            i -= 1
            j = len(all_scores[i]) - 1
        return runs

    def gather(self, runs: list[int], reverse: bool, with_scores: bool) -> tuple[list[float], list[bytes]]:
        """The scores (when asked) and the members of `scan_up`/`scan_down`'s runs."""
        all_scores, all_members = self._scores, self._members
        scores: list[float] = []
        members: list[bytes] = []
        for r in range(0, len(runs), 3):
            i, start, stop = runs[r], runs[r + 1], runs[r + 2]
            if reverse:
                members += reversed(all_members[i][start:stop])
                if with_scores:
                    scores += reversed(all_scores[i][start:stop])
            else:
                members += all_members[i][start:stop]
                if with_scores:
                    scores += all_scores[i][start:stop]
        return scores, members

    def check(self) -> None:
        """Assert the internal invariants (for tests)."""
        flat = list(self)
        assert flat == sorted(flat) and len(set(flat)) == len(flat)
        assert len(flat) == self._len
        assert len(self._scores) == len(self._members) == len(self._max_scores) == len(self._max_members)
        assert all(len(s) == len(m) for s, m in zip(self._scores, self._members, strict=True))
        assert all(self._scores) and all(len(s) <= 2 * LOAD for s in self._scores)
        assert self._max_scores == [s[-1] for s in self._scores]
        assert self._max_members == [m[-1] for m in self._members]
        if self._tree is not None:
            sizes = [len(s) for s in self._scores]
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

    def first_score(self) -> float | None:
        """The lowest score a key in range can have: keys from the first one scored this
        or more are in range as far as min goes (None: no key can be)."""
        return _score_floor(self.min, above=self.minex)

    def past_score(self) -> float | None:
        """The lowest score beyond max (None: no key can be)."""
        return _score_floor(self.max, above=not self.maxex)


def _score_floor(score: float, above: bool) -> float | None:
    """`score`, or when `above` the next double after it: the lowest score a key must
    have to be >= `score` (or > it)."""
    if above:
        if score == math.inf:
            return None
        score = math.nextafter(score, math.inf)
    return score


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
    """The listpack thresholds of a server's config (`Config.zset_limits`). A plain class,
    not a dataclass: compiled, a dataclass's generated __init__ costs ten times more."""

    __slots__ = ("entries", "value")

    def __init__(self, entries: int, value: int) -> None:
        self.entries = entries
        self.value = value

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
        return SortedKeys.from_columns(*_decode_columns(self._packed or b"")) if keys is None else keys

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
            scores, members = _decode_columns(packed)
            self._keys = SortedKeys.from_columns(scores, members)
            self._scores = dict(zip(members, scores))  # the same score objects as the columns'
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
        keys.insert(score, member)

    def update(self, member: bytes, score: float, current: float | None = None) -> None:
        """Give a present member a new score; `current`, when the caller has it (from
        `score`), spares looking the old score up again."""
        if score == 0 and not self.skiplist:
            score = 0.0
        packed = self._packed
        if packed is not None:
            pos = _find_member(packed, member)
            self._packed = _inserted(packed[:pos] + packed[pos + 9 + len(member):], score, member)
            return
        scores, keys = self._scores, self._keys
        assert scores is not None and keys is not None
        keys.move(member, scores[member] if current is None else current, score)
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
        keys.remove(score, member)
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
        members = sorted_keys.delete_range(start, stop)
        for member in members:
            del scores[member]
        return len(members)

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
            score = rng.first_score()
            return len(keys) if score is None else keys.below_score(score)
        return keys.first_true(rng.gte_min)

    def _count_through(self, keys: SortedKeys, rng: Range) -> int:
        """How many keys sort before the first key beyond the range's max."""
        if isinstance(rng, ScoreRange):
            score = rng.past_score()
            return len(keys) if score is None else keys.below_score(score)
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
        first, past = rng.first_score(), rng.past_score()
        lo = len(keys) if first is None else keys.below_score(first)
        hi = len(keys) if past is None else keys.below_score(past)
        return lo, hi

    def range_by_score(self, rng: ScoreRange, offset: int, limit: int, reverse: bool,
                       with_scores: bool = True) -> tuple[list[float], list[bytes]]:
        """`range_query` for a score range, from two searches: the keys in reply order,
        as their scores (when asked; else none) and their members. A listpack steps
        `offset` keys from the first (last) key in range, so a negative offset finds
        nothing; a skiplist seeks the offset-th key in range, a negative offset counting
        from the far end of it. A negative limit means no limit."""
        if limit == 0 or (offset < 0 and not self.skiplist):
            return [], []
        keys = self.sorted_keys()
        if offset >= 0:  # the common case: read from where the range starts (ends)
            first = rng.first_score()
            if first is None:
                return [], []
            past = rng.past_score()
            if reverse:
                runs = keys.scan_down(past, first, offset, limit)
            else:
                runs = keys.scan_up(first, past, offset, limit)
            if runs is not None:
                return keys.gather(runs, reverse, with_scores)
        lo, hi = self._score_positions(keys, rng)
        if hi <= lo:
            return [], []
        if reverse:
            start = hi - 1 - offset if offset >= 0 else lo - offset - 1
            if not lo <= start < hi:
                return [], []
            return keys.columns(lo if limit < 0 else max(lo, start - limit + 1), start + 1, True)
        start = lo + offset if offset >= 0 else hi + offset
        if not lo <= start < hi:
            return [], []
        return keys.columns(start, hi if limit < 0 else min(hi, start + limit))

    def range_query(self, rng: Range, offset: int, limit: int, reverse: bool) -> list[Pair]:
        """ZRANGEBYSCORE/ZRANGEBYLEX with LIMIT as Valkey walks it. A listpack steps
        `offset` keys from the first (last) key in range, so a negative offset finds
        nothing; a skiplist seeks the offset-th key in range, where a negative offset
        counts from the far end of the range. A negative limit means no limit."""
        if isinstance(rng, ScoreRange):
            scores, members = self.range_by_score(rng, offset, limit, reverse)
            return list(zip(members, scores))
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
        out: list[Pair] = []
        for key in keys.iter_from(start, reverse):
            # called, not held as `inside = rng.gte_min if ...`: compiled, a held method
            # is a generic call per key
            if not (rng.gte_min(key) if reverse else rng.lte_max(key)):
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


def _decode_columns(packed: bytes) -> tuple[list[float], list[bytes]]:
    """`_decode`'s keys as two lists, their scores and their members."""
    scores: list[float] = []
    members: list[bytes] = []
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 9 + packed[pos + 8]
        scores.append(_score_at(packed, pos))
        members.append(packed[pos + 9:at])
        pos = at
    return scores, members


def _encode(keys: list[Key]) -> bytes:
    length = _LENGTH
    return b"".join([part for score, member in keys
                     for part in (_pack_double(score), length[len(member)], member)])
