"""ListValue (fakekey/types/list.py): a small list packed in one `bytes`, a bigger one a
deque, behind a deque's methods. Random operations against a deque must agree at every
step, across the moves between the two forms."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import pytest

from fakekey.types.list import PACKED_MAX_ITEMS, REPACK_AT, ListValue


def element(rng: random.Random) -> bytes:
    size = rng.choice((0, 1, 3, 10, 63, 64, 200, 255, 255, 256, 1000) if rng.random() < 0.1 else (0, 1, 5, 12))
    return bytes(rng.randrange(256) for _ in range(size))


def outcome(action: Any) -> Any:
    try:
        return action()
    except (IndexError, ValueError) as err:
        return type(err)


def step(rng: random.Random, ref: deque[bytes], lst: ListValue) -> None:
    op = rng.randrange(12)
    if op == 0:
        item = element(rng)
        ref.append(item)
        lst.append(item)
    elif op == 1:
        item = element(rng)
        ref.appendleft(item)
        lst.appendleft(item)
    elif op == 2:
        items = [element(rng) for _ in range(rng.randrange(40))]
        ref.extend(items)
        lst.extend(iter(items) if rng.random() < 0.5 else items)
    elif op == 3:
        items = [element(rng) for _ in range(rng.randrange(40))]
        ref.extendleft(items)
        lst.extendleft(items)
    elif op in (4, 5):
        for _ in range(rng.randrange(1, 40)):
            assert outcome(ref.pop if op == 4 else ref.popleft) == outcome(lst.pop if op == 4 else lst.popleft)
    elif op == 6:
        index = rng.randrange(-len(ref) - 2, len(ref) + 2)
        assert outcome(lambda: ref[index]) == outcome(lambda: lst[index])
    elif op == 7 and ref:
        index = rng.randrange(-len(ref), len(ref))
        item = element(rng)
        ref[index] = item
        lst[index] = item
    elif op == 8:
        index = rng.randrange(-len(ref) - 2, len(ref) + 3)
        item = element(rng)
        ref.insert(index, item)
        lst.insert(index, item)
    elif op == 9:
        item = rng.choice(ref) if ref and rng.random() < 0.7 else element(rng)
        assert outcome(lambda: ref.index(item)) == outcome(lambda: lst.index(item))
        assert (item in ref) == (item in lst)
    elif op == 10 and rng.random() < 0.1:
        ref.clear()
        lst.clear()
    elif op == 11:
        twin = lst.copy()
        twin.append(b"only in the copy")
        assert list(twin)[:-1] == list(ref)


@pytest.mark.parametrize("seed", range(8))
def test_a_list_agrees_with_a_deque_across_its_forms(seed: int) -> None:
    rng = random.Random(seed)
    ref: deque[bytes] = deque()
    lst = ListValue()
    for _ in range(300):
        step(rng, ref, lst)
        assert len(lst) == len(ref) and bool(lst) == bool(ref)
        assert list(lst) == list(ref)
        assert list(reversed(lst)) == list(reversed(ref))


def test_small_lists_are_packed_and_shrunk_ones_packed_again() -> None:
    lst = ListValue([b"v:%08d" % i for i in range(10)])
    assert lst.is_packed()
    lst.extend([b"x"] * PACKED_MAX_ITEMS)
    assert not lst.is_packed()
    while len(lst) > REPACK_AT:
        lst.pop()
    assert lst.is_packed()
    assert list(lst) == [b"v:%08d" % i for i in range(10)] + [b"x"] * (REPACK_AT - 10)
    lst.append(b"y" * 256)  # too long for a length byte
    assert not lst.is_packed() and lst[-1] == b"y" * 256
