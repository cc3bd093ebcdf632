"""The byte forms both files share: framed records with a checksum, and the value codec.

A file is a sequence of frames: `length:u32 | crc32:u32 | payload` (little endian), the
CRC over the payload. A frame is whole or it is not: a reader tells a frame cut short at
the end of the file (a crash mid-write: "truncated") from a bad frame with data after it
("corrupt"), and names the offset either way.

The value codec writes every type by its content, independent of the encoding Valkey
would pick (the encoding flags that fakekey tracks one-way are kept so OBJECT ENCODING
answers as before). Encoders are generators that yield every few hundred elements, so a
background save can encode a huge value a slice at a time between event-loop turns.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

from fakekey.types.hash import HashValue
from fakekey.types.list import ListValue
from fakekey.types.module_value import MODULE_TYPES, ModuleValue
from fakekey.types.set import SetValue
from fakekey.types.stream import Consumer, Group, Nack, Node, StreamValue
from fakekey.types.zset import ZSet

_HEAD = struct.Struct("<II")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")
_ID = struct.Struct("<QQ")
FRAME_HEAD = _HEAD.size
MAX_FRAME = 1 << 40  # a length beyond this is garbage, not a record
STEP = 512  # elements encoded between two yields

# value type tags
T_STRING, T_RAW_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_STREAM, T_MODULE = b"sSlezhxm"
_SET_ENCODINGS = ("intset", "listpack", "hashtable")


class CorruptData(Exception):
    """A payload that does not decode (inside a frame whose checksum matched)."""


class FrameError(Exception):
    """A frame that cannot be read: `truncated` when it is cut by the end of the data."""

    def __init__(self, offset: int, reason: str, truncated: bool) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.truncated = truncated


# --- frames -----------------------------------------------------------------------------------


def frame(payload: bytes | bytearray) -> bytes:
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def iter_frames(data: bytes | memoryview, start: int = 0) -> Iterator[tuple[int, memoryview]]:
    """(offset, payload) of each frame from `start`; FrameError on the first bad one."""
    view = memoryview(data)
    end = len(view)
    at = start
    while at < end:
        if end - at < FRAME_HEAD:
            raise FrameError(at, "incomplete record header", truncated=True)
        length, crc = _HEAD.unpack_from(view, at)
        body = at + FRAME_HEAD
        if length == 0 or length > MAX_FRAME:
            zeros = not any(view[at:])
            raise FrameError(at, f"invalid record length {length}", truncated=zeros)
        if body + length > end:
            raise FrameError(at, f"record of {length} bytes cut by the end of the file", truncated=True)
        payload = view[body:body + length]
        if zlib.crc32(payload) != crc:
            # the last frame of the file torn by a crash, or damage with data after it
            raise FrameError(at, "checksum mismatch", truncated=body + length == end)
        yield at, payload
        at = body + length


# --- primitive writer / reader ----------------------------------------------------------------


class Writer:
    """Appends primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def u8(self, n: int) -> None:
        self.buf.append(n)

    def u32(self, n: int) -> None:
        self.buf += _U32.pack(n)

    def u64(self, n: int) -> None:
        self.buf += _U64.pack(n)

    def i64(self, n: int) -> None:
        self.buf += _I64.pack(n)

    def f64(self, x: float) -> None:
        self.buf += _F64.pack(x)

    def sid(self, sid: tuple[int, int]) -> None:
        self.buf += _ID.pack(*sid)

    def blob(self, data: bytes | bytearray) -> None:
        self.buf += _U64.pack(len(data))
        self.buf += data


class Reader:
    """Reads primitives back; CorruptData when the payload ends early."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0

    def _take(self, n: int) -> int:
        at = self.pos
        if n < 0 or at + n > len(self.data):
            raise CorruptData(f"payload ends early at byte {at} (wanted {n} more)")
        self.pos = at + n
        return at

    def u8(self) -> int:
        return self.data[self._take(1)]

    def u32(self) -> int:
        return _U32.unpack_from(self.data, self._take(4))[0]

    def u64(self) -> int:
        return _U64.unpack_from(self.data, self._take(8))[0]

    def i64(self) -> int:
        return _I64.unpack_from(self.data, self._take(8))[0]

    def f64(self) -> float:
        return _F64.unpack_from(self.data, self._take(8))[0]

    def sid(self) -> tuple[int, int]:
        ms, seq = _ID.unpack_from(self.data, self._take(16))
        return ms, seq

    def blob(self) -> bytes:
        n = self.u64()
        at = self._take(n)
        return self.data[at:at + n]

    def count(self) -> int:
        """An element count, bounded by the bytes left (each element takes one at least)."""
        n = self.u64()
        if n > len(self.data) - self.pos:
            raise CorruptData(f"count {n} larger than the payload")
        return n

    def done(self) -> bool:
        return self.pos == len(self.data)


# --- values -------------------------------------------------------------------------------------


def encode_value(w: Writer, value: Any) -> None:
    """The whole value at once."""
    for _ in iter_encode_value(w, value):
        pass


def iter_encode_value(w: Writer, value: Any) -> Iterator[None]:
    """Encode `value` into `w`, yielding every STEP elements."""
    kind = type(value)
    if kind is int:  # a counter INCR left (fakekey/core/keyspace.py): a string
        value, kind = b"%d" % value, bytes
    if kind is bytes or kind is bytearray:
        w.u8(T_STRING if kind is bytes else T_RAW_STRING)
        w.blob(value)
    elif kind is ListValue:
        w.u8(T_LIST)
        w.u64(len(value))
        for i, item in enumerate(value):
            w.blob(item)
            if i % STEP == STEP - 1:
                yield
    elif kind is SetValue:
        w.u8(T_SET)
        w.u8(_SET_ENCODINGS.index(value.enc))
        members = value.ordered()  # what the encoding iterates
        w.u64(len(members))
        for i, member in enumerate(members):
            w.blob(member)
            if i % STEP == STEP - 1:
                yield
    elif kind is ZSet:
        w.u8(T_ZSET)
        w.u8(1 if value.skiplist else 0)
        w.u64(len(value))
        for i, (member, score) in enumerate(value.mapping().items()):
            w.blob(member)
            w.f64(score)
            if i % STEP == STEP - 1:
                yield
    elif kind is HashValue:
        w.u8(T_HASH)
        w.u8(1 if value.hashtable else 0)
        w.u64(len(value))
        ttls = value.ttls
        for i, (field, data) in enumerate(value.mapping().items()):
            w.blob(field)
            w.blob(data)
            w.i64(ttls.get(field, -1))
            if i % STEP == STEP - 1:
                yield
    elif kind is StreamValue:
        w.u8(T_STREAM)
        yield from _encode_stream(w, value)
    elif isinstance(value, ModuleValue):  # an emulated module's: its type, encver, payload
        w.u8(T_MODULE)
        w.blob(value.TYPE_NAME.encode())
        w.u64(value.ENCODING_VERSION)
        w.blob(value.payload())
    else:
        raise TypeError(f"cannot persist a value of type {kind.__name__}")


def _encode_stream(w: Writer, s: StreamValue) -> Iterator[None]:
    w.u64(s.length)
    w.sid(s.first_id)
    w.sid(s.last_id)
    w.sid(s.max_deleted)
    w.u64(s.entries_added)
    w.u64(len(s.nodes))
    done = 0
    for node in s.nodes:
        # the node layout (master entry, tombstones) is kept: XINFO and trimming see it
        w.sid(node.master)
        w.u64(len(node.fields))
        for name in node.fields:
            w.blob(name)
        w.u64(len(node.entries))
        for entry in node.entries:
            w.sid(entry.id)
            w.u8(1 if entry.deleted else 0)
            w.u64(len(entry.pairs))
            for part in entry.pairs:
                w.blob(part)
            done += 1
            if done % STEP == 0:
                yield
    w.u64(len(s.groups))
    for name, group in s.groups.items():
        w.blob(name)
        w.sid(group.last_id)
        w.i64(group.entries_read)
        w.u64(len(group.consumers))
        for consumer in group.consumers.values():
            w.blob(consumer.name)
            w.i64(consumer.seen_time)
            w.i64(consumer.active_time)
        w.u64(len(group.pel))
        for sid, nack in group.pel.items():
            w.sid(sid)
            w.i64(nack.delivery_time)
            w.u64(nack.delivery_count)
            owner = nack.consumer
            w.u8(0 if owner is None else 1)
            if owner is not None:
                w.blob(owner.name)
            done += 1
            if done % STEP == 0:
                yield


def decode_value(r: Reader) -> Any:
    tag = r.u8()
    if tag == T_STRING:
        return r.blob()
    if tag == T_RAW_STRING:
        return bytearray(r.blob())
    if tag == T_LIST:
        return ListValue([r.blob() for _ in range(r.count())])
    if tag == T_SET:
        enc = r.u8()
        if enc >= len(_SET_ENCODINGS):
            raise CorruptData(f"unknown set encoding {enc}")
        s = SetValue(_SET_ENCODINGS[enc])
        for _ in range(r.count()):
            s._insert(r.blob())
        return s
    if tag == T_ZSET:
        z = ZSet(skiplist=bool(r.u8()))
        scores = {}
        for _ in range(r.count()):
            member = r.blob()
            scores[member] = r.f64()
        z.load(list(scores.items()))
        return z
    if tag == T_HASH:
        return _decode_hash(r)
    if tag == T_STREAM:
        return _decode_stream(r)
    if tag == T_MODULE:
        return _decode_module(r)
    raise CorruptData(f"unknown value type {tag}")


def _decode_module(r: Reader) -> ModuleValue:
    name = r.blob().decode("ascii", "replace")
    encoding_version = r.u64()
    payload = r.blob()
    kind = MODULE_TYPES.get(name)
    if kind is None:
        raise CorruptData(f"a value of the unknown module type {name!r}")
    try:
        return kind.from_payload(payload, encoding_version)
    except ValueError as err:
        raise CorruptData(f"a {name} value that does not load: {err}") from None


def _decode_hash(r: Reader) -> HashValue:
    h = HashValue()
    if r.u8():
        h.to_hashtable()
    for _ in range(r.count()):
        field = r.blob()
        h.set(field, r.blob())
        ttl = r.i64()
        if ttl >= 0:
            h.set_ttl(field, ttl)
    return h


def _decode_stream(r: Reader) -> StreamValue:
    s = StreamValue()
    s.length = r.u64()
    s.first_id = r.sid()
    s.last_id = r.sid()
    s.max_deleted = r.sid()
    s.entries_added = r.u64()
    for _ in range(r.count()):
        master = r.sid()
        fields = tuple(r.blob() for _ in range(r.count()))
        node = Node(master, fields)
        for _ in range(r.count()):
            sid = r.sid()
            deleted = r.u8()
            pairs = tuple(r.blob() for _ in range(r.count()))
            node.add(sid, pairs)
            if deleted:
                node.entries[-1].deleted = True
                node.live -= 1
                node.deleted += 1
        s.nodes.append(node)
        s.masters.append(master)
    for _ in range(r.count()):
        name = r.blob()
        group = Group(r.sid(), r.i64())
        for _ in range(r.count()):
            consumer = Consumer(r.blob(), r.i64(), group.pel)
            consumer.active_time = r.i64()
            group.consumers[consumer.name] = consumer
        for _ in range(r.count()):
            sid = r.sid()
            nack = Nack(r.i64(), None)
            nack.delivery_count = r.u64()
            if r.u8():
                owner = group.consumers.get(r.blob())
                if owner is None:
                    raise CorruptData("a pending entry names an unknown consumer")
                nack.consumer = owner
                owner.pel.add(sid)
            group.pel.add(sid, nack)
        s.groups[name] = group
    if sum(node.live for node in s.nodes) != s.length:
        raise CorruptData("stream length does not match its entries")
    return s
