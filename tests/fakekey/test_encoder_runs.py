"""Big aggregate replies are joined JOIN_RUN parts at a time (fakekey/resp/encoder.py): the
bytes must be exactly those of one join, wherever a run ends (inside a nested array, between
a field and its value)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fakekey.resp.encoder import JOIN_RUN, RESP2, RESP3, join_after


def reference(item: Any) -> bytes:
    """RESP2 written out plainly, for the kinds these tests use."""
    if isinstance(item, bytes):
        return b"$%d\r\n%s\r\n" % (len(item), item)
    if isinstance(item, int):
        return b":%d\r\n" % item
    if isinstance(item, dict):
        return b"*%d\r\n" % (2 * len(item)) + b"".join(reference(k) + reference(v) for k, v in item.items())
    return b"*%d\r\n" % len(item) + b"".join(reference(i) for i in item)


LEAVES = st.one_of(st.binary(max_size=6), st.integers(-(2**63), 2**63 - 1))
NESTED = st.lists(st.one_of(LEAVES, st.lists(LEAVES, max_size=5)), max_size=3 * JOIN_RUN // 2)


@given(NESTED)
def test_an_array_reads_the_same_joined_in_runs(items: list[Any]) -> None:
    assert RESP2.encode(items) == reference(items)
    assert RESP3.encode(items) == reference(items)


def test_a_million_part_reply_crosses_many_runs() -> None:
    keys = [b"key:%d" % i for i in range(20_000)]
    assert RESP2.encode(keys) == reference(keys)
    nested = [b"cursor", keys, [[b"id", [b"f", b"v"]]] * 3_000]
    assert RESP2.encode(nested) == reference(nested)


def test_a_big_map_reads_the_same_in_resp2() -> None:
    fields = {b"f%d" % i: (b"v%d" % i if i % 3 else i) for i in range(10_000)}
    assert RESP2.encode(fields) == reference(fields)


@given(st.lists(st.binary(max_size=4), max_size=3 * JOIN_RUN))
def test_join_after_is_the_head_then_every_part(parts: list[bytes]) -> None:
    assert join_after(b"*head\r\n", parts) == b"*head\r\n" + b"".join(parts)
