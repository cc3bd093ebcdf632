"""The value codec and the snapshot format, in process: whatever a random run of commands
leaves, a snapshot and its load give it back exactly (content, deadlines, the encoding
flags, stream internals), and damage anywhere is reported with its offset."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.core.client import Client
from fakekey.core.state import ServerState
from fakekey.net.server import new_state
from fakekey.persistence.codec import Reader, Writer, decode_value, encode_value
from fakekey.persistence.snapshot import LoadError, live_image, parse_snapshot, snapshot_bytes
from fakekey.resp.replies import ReplyError

KEYS = st.sampled_from([b"a", b"b", b"c"])
MEMBERS = st.sampled_from([b"1", b"2", b"300", b"-7", b"x", b"y" * 70, b""])
NUMBERS = st.sampled_from([b"0", b"1", b"2.5", b"-0", b"inf", b"-inf", b"12345678901"])
OPS = st.one_of(
    st.tuples(st.just(b"SET"), KEYS, MEMBERS),
    st.tuples(st.just(b"APPEND"), KEYS, MEMBERS),
    st.tuples(st.just(b"PEXPIRE"), KEYS, st.sampled_from([b"100000", b"999999999"])),
    st.tuples(st.just(b"RPUSH"), KEYS, MEMBERS, MEMBERS),
    st.tuples(st.just(b"LPOP"), KEYS),
    st.tuples(st.just(b"SADD"), KEYS, MEMBERS, MEMBERS),
    st.tuples(st.just(b"SREM"), KEYS, MEMBERS),
    st.tuples(st.just(b"ZADD"), KEYS, NUMBERS, MEMBERS),
    st.tuples(st.just(b"ZREM"), KEYS, MEMBERS),
    st.tuples(st.just(b"HSET"), KEYS, MEMBERS, MEMBERS),
    st.tuples(st.just(b"HDEL"), KEYS, MEMBERS),
    st.tuples(st.just(b"HPEXPIRE"), KEYS, st.just(b"500000"), st.just(b"FIELDS"), st.just(b"1"), MEMBERS),
    st.tuples(st.just(b"XADD"), KEYS, st.just(b"*"), MEMBERS, MEMBERS),
    st.tuples(st.just(b"XDEL"), KEYS, st.sampled_from([b"0-1", b"1-0"])),
    st.tuples(st.just(b"XTRIM"), KEYS, st.just(b"MAXLEN"), st.sampled_from([b"1", b"3"])),
    st.tuples(st.just(b"XGROUP"), st.just(b"CREATE"), KEYS, st.sampled_from([b"g", b"h"]), st.just(b"0")),
    st.tuples(st.just(b"XREADGROUP"), st.just(b"GROUP"), st.just(b"g"), st.sampled_from([b"c1", b"c2"]),
              st.just(b"COUNT"), st.just(b"2"), st.just(b"STREAMS"), KEYS, st.just(b">")),
    st.tuples(st.just(b"XACK"), KEYS, st.just(b"g"), st.sampled_from([b"0-1", b"1-0"])),
    st.tuples(st.just(b"XCLAIM"), KEYS, st.just(b"g"), st.just(b"c3"), st.just(b"0"), st.just(b"0-1")),
    st.tuples(st.just(b"SELECT"), st.sampled_from([b"0", b"3"])),
)


def run(state: ServerState, client: Client, argv: tuple[bytes, ...]) -> Any:
    cmd = state.lookup_command(list(argv))
    if isinstance(cmd, ReplyError):
        return cmd
    state.now = state.clock.now_ms()
    try:
        return cmd.handler(client, list(argv))
    except ReplyError as err:
        return err


def encoded(value: Any) -> bytes:
    w = Writer()
    encode_value(w, value)
    return bytes(w.buf)


@given(st.lists(OPS, max_size=40))
def test_a_snapshot_gives_back_every_value_exactly(ops: list[tuple[bytes, ...]]) -> None:
    state = new_state()
    client = Client(state)
    for argv in ops:
        run(state, client, argv)
    data = snapshot_bytes(live_image(state), 0)
    loaded = parse_snapshot("mem", data)
    found = {(db, key): (deadline, value) for db, key, deadline, value in loaded.keys}
    expected = {(db.index, key): (db.expires.get(key, -1), value)
                for db in state.dbs for key, value in db.data.items()}
    assert found.keys() == expected.keys()
    for where, (deadline, value) in expected.items():
        again_deadline, again = found[where]
        assert again_deadline == deadline
        assert type(again) is type(value)
        assert encoded(again) == encoded(value)
        assert again.encoding(state) == value.encoding(state) if hasattr(value, "encoding") else True
        if type(value).__name__ == "StreamValue":
            assert [n.nbytes() for n in again.nodes] == [n.nbytes() for n in value.nodes]
            assert again.masters == value.masters


def test_stream_groups_survive_with_their_pel_owners() -> None:
    state = new_state()
    client = Client(state)
    for argv in ([b"XADD", b"s", b"1-1", b"f", b"v"], [b"XADD", b"s", b"2-1", b"f", b"w"],
                 [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
                 [b"XREADGROUP", b"GROUP", b"g", b"alice", b"STREAMS", b"s", b">"],
                 [b"XCLAIM", b"s", b"g", b"bob", b"0", b"2-1"]):
        run(state, client, tuple(argv))
    value = state.dbs[0].data[b"s"]
    r = Reader(encoded(value))
    again = decode_value(r)
    group = again.groups[b"g"]
    assert {sid: nack.consumer.name for sid, nack in group.pel.items()} == {
        (1, 1): b"alice", (2, 1): b"bob"}
    assert group.consumers[b"bob"].pel.ids == [(2, 1)]
    assert group.pel.nacks[group.pel.find((2, 1))].delivery_count == 2
    assert group.entries_read == value.groups[b"g"].entries_read == 2


@pytest.mark.parametrize("where", ["header", "middle", "end", "cut"])
def test_damage_is_named_with_its_offset(where: str) -> None:
    state = new_state()
    client = Client(state)
    for i in range(20):
        run(state, client, (b"SET", b"k%d" % i, b"v" * 30))
    data = bytearray(snapshot_bytes(live_image(state), 0))
    if where == "cut":
        data = data[:-3]
    else:
        at = {"header": 10, "middle": len(data) // 2, "end": len(data) - 2}[where]
        data[at] ^= 0x40
    with pytest.raises(LoadError, match=r"^mem: .*offset \d+"):
        parse_snapshot("mem", bytes(data))
