"""The stream's id arithmetic and pending lists (fakekey/types/stream.py) against plain
sorted lists of tuples: bisection on native integers, the pending list's order through
adds and removals in any order, and the walks for the first and last live entries."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from hypothesis import given
from hypothesis import strategies as st

from fakekey.types.stream import (
    MAX_ID,
    MIN_ID,
    U64_MAX,
    Consumer,
    Group,
    Nack,
    Pel,
    StreamValue,
    bisect_ids,
    format_id,
    id_before,
)

# ids near the edges of both halves, where a comparison on one half alone would go wrong
parts = st.one_of(st.integers(0, 5), st.integers(U64_MAX - 2, U64_MAX), st.integers(0, 2**63))
ids = st.tuples(parts, parts)


@given(st.lists(ids, max_size=40), ids)
def test_bisect_ids_agrees_with_bisect_on_tuples(found, probe):
    sorted_ids = sorted(set(found))
    assert bisect_ids(sorted_ids, probe) == bisect_left(sorted_ids, probe)
    assert bisect_ids(sorted_ids, probe, right=True) == bisect_right(sorted_ids, probe)


@given(ids, ids)
def test_id_before_is_tuple_order(a, b):
    assert id_before(a, b) == (a < b)


@given(ids)
def test_format_id_is_ms_dash_seq(sid):
    assert format_id(sid) == f"{sid[0]}-{sid[1]}".encode()


@given(st.lists(st.tuples(st.booleans(), ids), max_size=60), ids)
def test_pel_keeps_id_order_through_adds_and_removes(steps, start):
    pel, model = Pel(), {}
    for add, sid in steps:
        if add:
            nack = Nack(0, None)
            pel.add(sid, nack)
            model[sid] = nack  # an id pending already keeps its place, with the new nack
        else:
            assert (pel.remove(sid) is not None) == (model.pop(sid, None) is not None)
    expected = sorted(model)
    assert pel.ids == expected
    assert len(pel) == len(expected)
    assert [sid for sid, _ in pel.items()] == expected
    assert [sid for sid, _ in pel.items(start)] == [sid for sid in expected if sid >= start]
    assert pel.position(start) == bisect_left(expected, start)
    for sid in expected:
        assert sid in pel and pel.get(sid) is model[sid]


@given(st.lists(st.tuples(st.sampled_from(["deliver", "ack", "claim"]), st.integers(0, 2), ids),
                max_size=60))
def test_consumers_own_their_ids_in_order_through_deliveries_acks_and_claims(steps):
    group = Group(MIN_ID, 0)
    consumers = [Consumer(b"c%d" % i, 0, group.pel) for i in range(3)]
    owner: dict[tuple[int, int], int] = {}  # the model: each pending id's consumer
    for action, who, sid in steps:
        if action == "deliver" and sid not in owner:  # as XREADGROUP delivers a new entry
            group.pel.add(sid, Nack(0, consumers[who]))
            consumers[who].pel.add(sid)
            owner[sid] = who
        elif action == "ack":
            assert group.ack(sid) == (owner.pop(sid, None) is not None)
        elif action == "claim" and sid in owner:  # as XCLAIM moves it
            nack = group.pel.get(sid)
            assert nack is not None
            group.assign(sid, nack, consumers[who])
            owner[sid] = who
    assert group.pel.ids == sorted(owner)
    for who, consumer in enumerate(consumers):
        mine = sorted(sid for sid, at in owner.items() if at == who)
        assert consumer.pel.ids == mine and len(consumer.pel) == len(mine)
        assert [(sid, nack.consumer) for sid, nack in consumer.pel.items()] == [(sid, consumer) for sid in mine]
        if mine:
            assert [sid for sid, _ in consumer.pel.items(mine[-1])] == [mine[-1]]


@given(st.lists(st.booleans(), min_size=1, max_size=30))
def test_first_and_last_live_ids_skip_tombstones(deleted):
    s = StreamValue()
    for seq in range(len(deleted)):
        s.append((1, seq), (b"f", b"v"), 4096, 4)  # nodes of 4 entries: walks cross nodes
    for seq, gone in enumerate(deleted):
        if gone:
            s.delete((1, seq))
    live = [(1, seq) for seq, gone in enumerate(deleted) if not gone]
    assert s.first_valid_id() == (live[0] if live else None)
    assert s.last_valid_id() == (live[-1] if live else None)
    assert [sid for sid, _ in s.range(MIN_ID, MAX_ID)] == live
    assert [sid for sid, _ in s.range(MIN_ID, MAX_ID, rev=True)] == live[::-1]
