"""The sorted-set structure (fakekey/types/zset.py) against plain sorted lists.

Small sublists (LOAD patched down) make every split, merge and Fenwick rebuild happen in
a few hundred operations; a million-member set checks the positional index at scale.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left

import pytest

from fakekey.types import zset as zset_module
from fakekey.types.zset import (
    LEX_MAX,
    LEX_MIN,
    LexRange,
    ScoreRange,
    SortedKeys,
    ZLimits,
    ZSet,
)

BIG = ZLimits(entries=10**9, value=10**9)  # always a listpack
TINY = ZLimits(entries=0, value=0)  # always a skiplist


@pytest.fixture
def small_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zset_module, "LOAD", 4)


def random_key(rng: random.Random) -> tuple[float, bytes]:
    score = float(rng.choice([rng.randint(-5, 5), rng.random(), -0.0, float("inf")]))
    return score, bytes(rng.choice(b"abc") for _ in range(rng.randint(0, 3)))


@pytest.mark.parametrize("seed", range(6))
def test_sorted_keys_matches_a_sorted_list(small_load: None, seed: int) -> None:
    rng = random.Random(seed)
    keys = SortedKeys()
    model: list[tuple[float, bytes]] = []
    for _ in range(1500):
        op = rng.random()
        if op < 0.5:
            key = random_key(rng)
            if key not in model:
                keys.insert(*key)
                model.insert(bisect_left(model, key), key)
        elif op < 0.6 and model:
            key = rng.choice(model)
            keys.remove(*key)
            model.remove(key)
        elif op < 0.65 and model:  # a new score for a member: in place, within or across sublists
            key = rng.choice(model)
            moved = (random_key(rng)[0], key[1])
            if moved not in model:
                keys.move(key[1], key[0], moved[0])
                model.remove(key)
                model.insert(bisect_left(model, moved), moved)
        elif op < 0.75 and model:
            pos = rng.choice([0, -1, rng.randrange(len(model))])
            assert keys.pop(pos) == model.pop(pos)
        elif op < 0.8 and model:
            start = rng.randrange(len(model))
            stop = start + rng.randint(0, 12)
            assert keys.delete_range(start, stop) == [member for _, member in model[start:stop]]
            del model[start:stop]
        elif model:
            pos = rng.randrange(len(model))
            key = model[pos]
            assert keys.at(pos) == key
            assert keys.index(key) == pos
            probe = random_key(rng)
            assert keys.bisect(probe) == bisect_left(model, probe)
            assert keys.below_score(probe[0]) == bisect_left(model, (probe[0], b""))
            assert keys.first_true(lambda k, p=probe: k >= p) == bisect_left(model, probe)
            assert list(keys.iter_from(pos)) == model[pos:]
            assert list(keys.iter_from(pos, reverse=True)) == model[pos::-1]
            stop = min(len(model), pos + rng.randint(0, 9))
            assert keys.slice(pos, stop) == model[pos:stop]
            assert keys.slice(pos, stop, reverse=True) == model[pos:stop][::-1]
            assert keys.slice(pos, pos + 40) == model[pos:pos + 40]  # across sublists, past the end
        keys.check()
    assert list(keys) == model and len(keys) == len(model)


def test_sorted_keys_bulk_load_and_copy_are_independent(small_load: None) -> None:
    model = [(float(i), b"m") for i in range(50)]
    keys = SortedKeys(list(model))
    clone = keys.copy()
    keys.remove(3.0, b"m")
    keys.check()
    clone.check()
    assert list(clone) == model
    assert len(keys) == 49 and keys.at(3) == (4.0, b"m")


def test_delete_range_everything_and_past_the_end(small_load: None) -> None:
    keys = SortedKeys([(float(i), b"") for i in range(30)])
    assert len(keys.delete_range(25, 100)) == 5
    keys.check()
    assert len(keys.delete_range(0, 25)) == 25
    assert len(keys) == 0 and list(keys) == []
    keys.insert(1.0, b"x")
    keys.check()


def test_order_is_score_then_member_bytewise() -> None:
    zs = ZSet()
    for member, score in [(b"b", 1.0), (b"a", 1.0), (b"ab", 1.0), (b"\xff", 0.5), (b"", 1.0)]:
        zs.insert(member, score, BIG)
    assert [m for m, _ in zs.pairs()] == [b"\xff", b"", b"a", b"ab", b"b"]
    assert zs.rank(b"ab") == 3 and zs.rank(b"ab", reverse=True) == 1
    assert zs.rank(b"missing") is None


def test_listpack_stores_negative_zero_as_zero_skiplist_keeps_it() -> None:
    listpack, skiplist = ZSet.create(1, 1, BIG), ZSet.create(1, 1, TINY)
    for zs in (listpack, skiplist):
        zs.insert(b"m", -0.0, BIG)
        zs.check()
    assert str(listpack.score(b"m")) == "0.0"
    assert str(skiplist.score(b"m")) == "-0.0"
    stored = ZSet.from_pairs([(b"m", -0.0)], BIG)
    assert str(stored.score(b"m")) == "0.0" and stored.encoding() == b"listpack"


def test_encoding_converts_one_way() -> None:
    limits = ZLimits(entries=3, value=4)
    zs = ZSet.create(3, 4, limits)
    for i, member in enumerate([b"a", b"b", b"c"]):
        zs.insert(member, float(i), limits)
    assert zs.encoding() == b"listpack"
    zs.insert(b"d", 3.0, limits)
    assert zs.encoding() == b"skiplist"
    zs.remove(b"a")
    zs.remove(b"b")
    assert zs.encoding() == b"skiplist"
    long_member = ZSet.create(1, 1, limits)
    long_member.insert(b"toolong", 1.0, limits)
    assert long_member.encoding() == b"skiplist"
    hinted = ZSet.create(1, 1, limits)
    hinted.grow_for(4, 1, limits)
    assert hinted.encoding() == b"skiplist"
    assert ZSet.create(4, 1, limits).encoding() == b"skiplist"
    assert ZSet.from_pairs([(b"a", 1.0)] * 1, limits).encoding() == b"listpack"
    copy = zs.copy()
    assert copy.encoding() == b"skiplist" and copy.pairs() == zs.pairs()
    copy.remove(b"c")
    assert zs.score(b"c") == 2.0


def brute_score_range(pairs: list[tuple[bytes, float]], rng: ScoreRange) -> list:
    return [(m, s) for m, s in pairs if rng.gte_min((s, m)) and rng.lte_max((s, m))]


@pytest.mark.parametrize("limits", [BIG, TINY], ids=["listpack", "skiplist"])
def test_score_ranges_match_brute_force(small_load: None, limits: ZLimits) -> None:
    rng = random.Random(7)
    zs = ZSet.create(0, 0, limits)
    for i in range(60):
        zs.insert(b"m%d" % i, float(rng.randint(-10, 10)), limits)
    pairs = zs.pairs()
    bounds = [float(x) for x in range(-12, 13)] + [float("inf"), float("-inf")]
    for _ in range(400):
        lo, hi = rng.choice(bounds), rng.choice(bounds)
        spec = ScoreRange(lo, hi, rng.random() < 0.5, rng.random() < 0.5)
        expected = brute_score_range(pairs, spec)
        assert zs.count_range(spec) == len(expected)
        offset, limit = rng.randint(0, 5), rng.choice([-1, 0, 1, 3])
        window = expected[offset:] if limit < 0 else expected[offset : offset + limit]
        assert zs.range_query(spec, offset, limit, reverse=False) == window
        backwards = expected[::-1]
        window = backwards[offset:] if limit < 0 else backwards[offset : offset + limit]
        assert zs.range_query(spec, offset, limit, reverse=True) == window


def model_score_range(keys: list, spec: ScoreRange, offset: int, limit: int, reverse: bool,
                      skiplist: bool) -> list:
    """ZRANGE BYSCORE LIMIT as Valkey walks it, on a plain sorted list: a skiplist counts a
    negative offset from the far end of the range, a listpack finds nothing with one."""
    inside = [(m, s) for s, m in keys if spec.gte_min((s, m)) and spec.lte_max((s, m))]
    if limit == 0 or (offset < 0 and not skiplist):
        return []
    seq = inside[::-1] if reverse else inside
    if offset < 0:
        seq = seq[len(seq) + offset:] if len(seq) + offset >= 0 else []
    else:
        seq = seq[offset:]
    return seq if limit < 0 else seq[:limit]


@pytest.mark.parametrize("seed", range(4))
def test_score_ranges_under_updates_match_the_model(small_load: None, seed: int) -> None:
    """Members move (update swaps keys within or across sublists) while ranges are read
    with offsets inside, across and past the sublists, negative ones included."""
    rng = random.Random(seed)
    bounds = [-math.inf, -3.0, -1.5, -0.0, 0.0, 1.0, 2.5, 3.0, 7.0, math.inf]
    for skiplist in (False, True):
        zs = ZSet(skiplist=skiplist)
        for _ in range(300):
            member = b"m%d" % rng.randrange(40)
            score = float(rng.choice([rng.randint(-5, 9), -1.5, 2.5]))
            current = zs.score(member)
            if current is None:
                zs.insert(member, score, BIG)
            elif current != score:
                zs.update(member, score)
            if rng.random() < 0.1:
                zs.remove(rng.choice(zs.members()))
            zs.check()
            keys = list(zs.sorted_keys())
            for _ in range(3):
                spec = ScoreRange(rng.choice(bounds), rng.choice(bounds), rng.random() < 0.3,
                                  rng.random() < 0.3)
                offset = rng.choice([0, 1, 2, 5, 9, 30, -1, -2, -7])
                limit = rng.choice([-1, 0, 1, 3, 10, 100])
                reverse = rng.random() < 0.5
                assert zs.range_query(spec, offset, limit, reverse) == model_score_range(
                    keys, spec, offset, limit, reverse, skiplist)


def test_negative_offset_follows_the_encoding() -> None:
    listpack, skiplist = ZSet(skiplist=False), ZSet(skiplist=True)
    for zs in (listpack, skiplist):
        for i, member in enumerate([b"a", b"b", b"c", b"d", b"e"], 1):
            zs.insert(member, float(i), BIG)
    spec = ScoreRange(2.0, 4.0)
    assert listpack.range_query(spec, -1, 5, reverse=False) == []
    assert skiplist.range_query(spec, -1, 5, reverse=False) == [(b"d", 4.0)]
    assert skiplist.range_query(spec, -2, 5, reverse=False) == [(b"c", 3.0), (b"d", 4.0)]
    assert skiplist.range_query(spec, -4, 5, reverse=False) == []
    assert skiplist.range_query(spec, -2, 5, reverse=True) == [(b"c", 3.0), (b"b", 2.0)]


def test_lex_ranges_with_equal_scores() -> None:
    zs = ZSet(skiplist=True)
    for member in [b"a", b"b", b"c", b"d", b"e"]:
        zs.insert(member, 0.0, BIG)
    spec = LexRange(b"b", False, b"d", True)  # [b (d
    assert zs.range_query(spec, 0, -1, reverse=False) == [(b"b", 0.0), (b"c", 0.0)]
    assert zs.count_range(spec) == 2
    assert zs.count_range(LexRange(LEX_MIN, True, LEX_MAX, True)) == 5
    assert zs.count_range(LexRange(LEX_MAX, True, LEX_MIN, True)) == 0
    assert zs.delete_range(spec) == 2
    assert [m for m, _ in zs.pairs()] == [b"a", b"d", b"e"]


def test_listpack_lex_walk_over_mixed_scores() -> None:
    """Over unequal scores a listpack walks the set in order (what Valkey 9.1 answers for
    ZADD m 5 a 1 b 3 c 2 d 4 e): forward from the first member >= min while <= max,
    backward from the last member <= max while >= min, after checking that the last
    member is >= min and the first <= max."""
    zs = ZSet(skiplist=False)
    for member, score in [(b"a", 5.0), (b"b", 1.0), (b"c", 3.0), (b"d", 2.0), (b"e", 4.0)]:
        zs.insert(member, score, BIG)
    a_to_d = LexRange(b"a", False, b"d", False)
    assert [m for m, _ in zs.range_query(a_to_d, 0, -1, reverse=False)] == [b"b", b"d", b"c"]
    assert [m for m, _ in zs.range_query(a_to_d, 0, -1, reverse=True)] == [
        b"a", b"e", b"c", b"d", b"b"
    ]
    assert [m for m, _ in zs.range_query(a_to_d, 1, 5, reverse=True)] == [b"e", b"c", b"d", b"b"]
    assert zs.count_range(a_to_d) == 3
    assert zs.range_query(LexRange(b"c", False, b"d", False), 0, -1, reverse=False) == []


def test_pop_and_random() -> None:
    zs = ZSet.from_pairs([(b"m%d" % i, float(i)) for i in range(10)], BIG)
    assert zs.pop(2, from_max=False) == [(b"m0", 0.0), (b"m1", 1.0)]
    assert zs.pop(1, from_max=True) == [(b"m9", 9.0)]
    assert zs.pop(100, from_max=True)[-1] == (b"m2", 2.0)
    assert len(zs) == 0
    zs = ZSet.from_pairs([(b"m%d" % i, float(i)) for i in range(10)], BIG)
    picks = zs.random_pairs(50)
    assert len(picks) == 50 and all(zs.score(m) == s for m, s in picks)
    distinct = zs.random_distinct(6)
    assert len({m for m, _ in distinct}) == 6
    assert distinct == sorted(distinct, key=lambda p: p[1])  # a listpack keeps its order


def test_a_million_members() -> None:
    """Positions, ranks, ranges, pops and changes stay right at a million members (the
    structure's costs are O(log n) per operation, see fakekey/types/zset.py)."""
    n = 1_000_000
    zs = ZSet.from_pairs([(b"m%07d" % i, float(i)) for i in range(n)], TINY)
    assert zs.encoding() == b"skiplist" and len(zs) == n
    for i in (0, 1, 999, 1000, 123_456, 500_000, n - 1001, n - 1):
        assert zs.rank(b"m%07d" % i) == i
        assert zs.sorted_keys().at(i) == (float(i), b"m%07d" % i)
    assert zs.pairs(700_000, 700_003) == [(b"m%07d" % i, float(i)) for i in range(700_000, 700_003)]
    assert zs.count_range(ScoreRange(10.0, 250_000.0, True, False)) == 249_990
    assert zs.range_query(ScoreRange(999_990.0, 2e6), 5, 3, reverse=False) == [
        (b"m%07d" % i, float(i)) for i in (999_995, 999_996, 999_997)
    ]
    zs.insert(b"new", 499_999.5, TINY)
    assert zs.rank(b"new") == 500_000 and zs.rank(b"m0500000") == 500_001
    zs.update(b"m0000000", 2e6)
    assert zs.rank(b"m0000000") == n  # now last of n + 1
    assert zs.pop(3, from_max=False) == [(b"m%07d" % i, float(i)) for i in (1, 2, 3)]
    assert zs.delete_positions(100_000, 300_000) == 200_000
    assert len(zs) == n + 1 - 3 - 200_000
    assert zs.rank(b"m0300004") == 100_000
    zs.check()
