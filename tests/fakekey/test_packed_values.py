"""The two forms of HashValue, SetValue and ZSet: the packed bytes of a small value and
the dict they leave them for. Random writes checked against a dict (whose order is a
listpack's), and the moves from one form to the other at their bounds."""

import random

from fakekey.types.hash import PACKED_MAX_FIELDS, PACKED_MAX_ITEM, HashValue
from fakekey.types.set import HASHTABLE, INTSET, LISTPACK, PACKED_MAX_MEMBERS, SetLimits, SetValue
from fakekey.types.zset import ZLimits, ZSet


def check(h: HashValue, model: dict[bytes, bytes]) -> None:
    assert len(h) == len(model)
    assert h.items() == list(model.items())
    assert h.field_names() == list(model)
    assert h.values() == list(model.values())
    assert h.as_dict() == model and dict(h.mapping()) == model
    for field, value in model.items():
        assert field in h and h.get(field) == value


def test_random_writes_match_a_dict_in_both_forms() -> None:
    rng = random.Random(30)
    alphabet = [bytes([b]) for b in (0, 1, 2, 3, 97, 255)]
    for _ in range(40):
        h, model = HashValue(), {}
        for _ in range(300):
            field = b"".join(rng.choices(alphabet, k=rng.randint(0, 3)))
            if rng.random() < 0.3:
                assert h.delete(field) == (model.pop(field, None) is not None)
            else:
                value = b"".join(rng.choices(alphabet, k=rng.randint(0, 4)))
                assert h.set(field, value) == (field not in model)
                model[field] = value
            assert h.get(b"\x09missing") is None and b"\x09missing" not in h
        check(h, model)


def test_packed_until_the_field_bound_then_a_dict_in_the_same_order() -> None:
    h = HashValue()
    model = {b"f%d" % i: b"v%d" % i for i in range(PACKED_MAX_FIELDS)}
    for field, value in model.items():
        h.set(field, value)
    assert h.is_packed() and h.encoding() == b"listpack"
    h.set(b"f0", b"overwritten")  # not a new field: stays packed
    model[b"f0"] = b"overwritten"
    assert h.is_packed()
    h.set(b"one-more", b"x")
    model[b"one-more"] = b"x"
    assert not h.is_packed() and h.encoding() == b"listpack"  # the encoding is not the form
    check(h, model)
    h.delete(b"one-more")
    del model[b"one-more"]
    assert not h.is_packed()  # never back
    check(h, model)


def test_an_item_too_long_for_its_length_byte_moves_to_a_dict() -> None:
    for field, value in ((b"f", b"v" * (PACKED_MAX_ITEM + 1)), (b"F" * (PACKED_MAX_ITEM + 1), b"v")):
        h = HashValue()
        h.set(b"a", b"1")
        h.set(b"b", b"v" * PACKED_MAX_ITEM)
        assert h.is_packed()
        h.set(field, value)
        assert not h.is_packed() and h.encoding() == b"listpack"
        check(h, {b"a": b"1", b"b": b"v" * PACKED_MAX_ITEM, field: value})


def test_conversions_and_ttls() -> None:
    h = HashValue()
    h.set(b"a", b"1")
    h.set(b"b", b"2")
    h.convert_for_write([b"c", b"x" * 10], 10, 5)
    assert h.encoding() == b"hashtable" and not h.is_packed() and h.field_names() == [b"a", b"b"]
    h = HashValue()
    h.set(b"a", b"1")
    h.set(b"b", b"2")
    assert not h.has_ttls() and h.ttls == {} and h.ttl_of(b"a") is None
    h.set_ttl(b"a", 1000)
    assert h.encoding() == b"hashtable" and h.ttls == {b"a": 1000} and h.has_ttls()
    h.set(b"a", b"kept", keep_ttl=True)
    assert h.ttl_of(b"a") == 1000
    assert h.expire_fields(1001) == [b"a"]
    assert h.items() == [(b"b", b"2")] and not h.has_ttls()


def test_a_copy_is_independent_in_both_forms() -> None:
    h = HashValue()
    h.set(b"a", b"1")
    twin = h.copy()
    twin.set(b"a", b"2")
    twin.set(b"b", b"3")
    assert h.items() == [(b"a", b"1")] and twin.items() == [(b"a", b"2"), (b"b", b"3")]
    h.set_ttl(b"a", 50)
    twin = h.copy()
    twin.persist(b"a")
    twin.set(b"c", b"4")
    assert h.ttl_of(b"a") == 50 and b"c" not in h and twin.encoding() == b"hashtable"


# --- sets ------------------------------------------------------------------------------------

WIDE = SetLimits(1000, 1000, 1000)  # thresholds raised past the packed form's bounds


def check_set(s: SetValue, model: list[bytes]) -> None:
    assert len(s) == len(model) and s.ordered() == model and list(s) == model
    for member in model:
        assert member in s
    assert b"\x09missing" not in s


def test_random_set_writes_match_a_list_in_both_forms() -> None:
    rng = random.Random(30)
    alphabet = [bytes([b]) for b in (0, 1, 2, 97, 255)]
    for _ in range(40):
        s, model = SetValue(LISTPACK), []
        for _ in range(300):
            member = b"".join(rng.choices(alphabet, k=rng.randint(0, 4)))
            if rng.random() < 0.3:
                assert s.remove(member) == (member in model)
                if member in model:
                    model.remove(member)
            else:
                assert s.add(member, WIDE) == (member not in model)
                if member not in model:
                    model.append(member)
        check_set(s, model)
        if model:
            assert s.random_member() in model


def test_a_packed_intset_stays_ascending_and_converts_in_that_order() -> None:
    rng = random.Random(5)
    numbers = rng.sample(range(-1000, 1000), 100)
    s = SetValue(INTSET)
    for n in numbers:
        assert s.add(b"%d" % n, WIDE)
    assert s.is_packed() and s.enc == INTSET
    check_set(s, [b"%d" % n for n in sorted(numbers)])
    s.add(b"x", WIDE)
    assert s.enc == LISTPACK and s.is_packed()
    check_set(s, [b"%d" % n for n in sorted(numbers)] + [b"x"])
    s.grow_for(2000, WIDE)
    assert s.enc == HASHTABLE and not s.is_packed()
    check_set(s, [b"%d" % n for n in sorted(numbers)] + [b"x"])


def test_sets_leave_the_packed_form_at_its_bounds_keeping_order() -> None:
    s = SetValue(LISTPACK)
    model = [b"m%d" % i for i in range(PACKED_MAX_MEMBERS)]
    for member in model:
        s.add(member, WIDE)
    assert s.is_packed()
    s.add(b"one-more", WIDE)
    model.append(b"one-more")
    assert not s.is_packed() and s.enc == LISTPACK
    check_set(s, model)
    s = SetValue(INTSET)
    for n in range(PACKED_MAX_MEMBERS + 5, 0, -1):
        s.add(b"%d" % n, WIDE)
    assert not s.is_packed() and s.enc == INTSET
    check_set(s, [b"%d" % n for n in range(1, PACKED_MAX_MEMBERS + 6)])
    s = SetValue(LISTPACK)
    s.add(b"a", WIDE)
    s.add(b"L" * 256, WIDE)
    assert not s.is_packed()
    check_set(s, [b"a", b"L" * 256])


def test_a_set_copy_is_independent_and_to_intset_sorts() -> None:
    s = SetValue(LISTPACK)
    for member in (b"30", b"-4", b"7"):
        s.add(member, WIDE)
    twin = s.copy()
    twin.add(b"8", WIDE)
    check_set(s, [b"30", b"-4", b"7"])
    s.to_intset_if_fits(WIDE)
    assert s.enc == INTSET
    check_set(s, [b"-4", b"7", b"30"])
    s.add(b"10", WIDE)
    check_set(s, [b"-4", b"7", b"10", b"30"])
    check_set(twin, [b"30", b"-4", b"7", b"8"])


# --- sorted sets -----------------------------------------------------------------------------

ZWIDE = ZLimits(1000, 1000)


def test_special_scores_keep_their_order_and_value() -> None:
    scores = [-float("inf"), -1e300, -2.5, -1.0, -5e-324, 0.0, 5e-324, 1.0, 2.5, 1e300, float("inf")]
    zs = ZSet()
    for i, score in enumerate(reversed(scores)):
        zs.insert(b"m%d" % i, score, ZWIDE)
    assert [score for _, score in zs.pairs()] == scores and zs.is_packed()
    zs = ZSet()
    zs.load([(b"b", 0.0), (b"a", -0.0), (b"c", -0.0)])  # a loaded -0 stays -0, equal to 0
    assert zs.is_packed() and zs.pairs() == [(b"a", 0.0), (b"b", 0.0), (b"c", 0.0)]
    assert str(zs.score(b"a")) == "-0.0" and zs.rank(b"b") == 1


def test_random_zset_writes_match_a_model() -> None:
    rng = random.Random(3)
    for _ in range(30):
        zs, model = ZSet(), {}
        for _ in range(300):
            member = bytes(rng.choices(b"ab\x00\xff", k=rng.randint(0, 3)))
            roll = rng.random()
            if roll < 0.5:
                score = rng.choice([-1.0, 0.0, -0.0, 1.0, 2.5, 1e9])
                if member in model:
                    zs.update(member, score)
                else:
                    zs.insert(member, score, ZWIDE)
                model[member] = score + 0.0  # a listpack keeps -0 as 0
            elif roll < 0.7:
                assert zs.remove(member) == (member in model)
                model.pop(member, None)
            elif model:
                count, from_max = rng.randint(1, 3), rng.random() < 0.5
                order = sorted((s, m) for m, s in model.items())
                taken = order[::-1][:count] if from_max else order[:count]
                assert zs.pop(count, from_max) == [(m, s) for s, m in taken]
                for _, m in taken:
                    del model[m]
            zs.check()
        order = sorted((s, m) for m, s in model.items())
        assert list(zs.sorted_keys()) == order and zs.is_packed()
        for member, score in model.items():
            assert member in zs and zs.score(member) == score
            assert zs.rank(member) == order.index((score, member))


def test_zsets_leave_the_packed_form_at_its_bounds() -> None:
    zs = ZSet()
    for i in range(128):
        zs.insert(b"m%d" % i, float(i % 7), ZWIDE)
    assert zs.is_packed()
    zs.insert(b"one-more", 3.0, ZWIDE)
    assert not zs.is_packed() and zs.encoding() == b"listpack"
    zs.check()
    zs = ZSet()
    zs.insert(b"a", 1.0, ZWIDE)
    zs.insert(b"L" * 256, 0.5, ZWIDE)
    assert not zs.is_packed() and zs.pairs() == [(b"L" * 256, 0.5), (b"a", 1.0)]
    zs = ZSet()
    zs.insert(b"a", 1.0, ZWIDE)
    twin = zs.copy()
    zs.to_skiplist()
    assert zs.encoding() == b"skiplist" and not zs.is_packed() and twin.is_packed()
    twin.insert(b"b", 0.0, ZWIDE)
    assert zs.pairs() == [(b"a", 1.0)] and twin.pairs() == [(b"b", 0.0), (b"a", 1.0)]
