"""Valkey's value serialization: the DUMP/RESTORE payload (and the RDB object encodings).

A payload is one RDB object (a type byte and the value), then the 2-byte little-endian
RDB version and the CRC64 (Jones polynomial, reflected) of everything before it, little
endian. Valkey 9.1.2 writes version 80 and restores 1..11 and 80 (12..79 are the foreign,
non-OSS Redis range, accepted only under `rdb-version-check relaxed`).

Covered, for writing (the encoding Valkey would have for the value, so small values
serialize byte for byte as Valkey's do):

- strings: integers of 32 bits as RDB integer encodings, else raw, LZF-compressed past 20
  bytes when `rdbcompression` is on (the compressor is LZF's VERY_FAST mode on an empty
  hash table; Valkey's table is not cleared between calls, so its output may very rarely
  pick a different, equally valid, back reference);
- lists: QUICKLIST_2, nodes of listpacks filled as quicklist fills them (`list-max-
  listpack-size`), elements too big for a node as PLAIN nodes;
- sets: INTSET, SET_LISTPACK, or SET (hashtable); hashes: HASH_LISTPACK, HASH, or HASH_2
  (hashtable with per-field expiry, -1 for a field without one); sorted sets:
  ZSET_LISTPACK (scores as Valkey prints them), ZSET_2 (greatest first, binary doubles);
- streams: STREAM_LISTPACKS_3 (nodes as Valkey's listpacks, tombstones included, the
  counters, groups with their PELs, consumers with seen and active times);
- an emulated module's value (fakekey/types/module_value.py): MODULE_2, as Valkey's
  rdbSaveObject writes a module's: the type's 64-bit id, then what the module saves (the
  payload's own RedisModule_Save* fields for a MODULE_IO type, else the payload as one
  module string field), then the module EOF opcode. Read back through the registered
  module types; an unknown type is Valkey's "no matching module type" error, as a server
  without the module answers.

For reading, every type a Valkey or Redis OSS DUMP produced: the above plus the older LIST,
ZSET (text doubles), HASH_ZIPMAP, LIST_ZIPLIST, ZSET_ZIPLIST, HASH_ZIPLIST, LIST_QUICKLIST
and STREAM_LISTPACKS(_2). A value is rebuilt with the encoding Valkey's loader picks for
the given thresholds. Everything is checked as Valkey's deep sanitization checks it
(listpack/ziplist/intset structure, duplicates, NaN scores, stream PEL consistency), and
no allocation is larger than what the payload itself justifies, so a hostile payload gets
`FormatError`, never an exception or a huge allocation.

Pure: values are the objects of `fakekey.types`; the thresholds come in as `Limits`.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fakekey.codecs.numbers import try_int
from fakekey.resp.encoder import format_double
from fakekey.types.hash import HashValue
from fakekey.types.list import ListValue
from fakekey.types.module_value import MODULE_TYPES, ModuleValue, module_type_id, module_type_of_id
from fakekey.types.set import HASHTABLE, INTSET, LISTPACK, SetValue, is_integer
from fakekey.types.stream import (
    INVALID_ENTRIES_READ,
    Consumer,
    Group,
    Nack,
    Node,
    StreamValue,
)
from fakekey.types.value import Settings
from fakekey.types.zset import ZSet

RDB_VERSION = 80
FOREIGN_MIN, FOREIGN_MAX = 12, 79
FOREIGN_TYPE_MIN = 22

# Object types.
T_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_ZSET_2 = 0, 1, 2, 3, 4, 5
T_MODULE_PRE_GA, T_MODULE_2 = 6, 7
T_HASH_ZIPMAP, T_LIST_ZIPLIST, T_SET_INTSET, T_ZSET_ZIPLIST, T_HASH_ZIPLIST = 9, 10, 11, 12, 13
T_LIST_QUICKLIST, T_STREAM_LISTPACKS, T_HASH_LISTPACK, T_ZSET_LISTPACK = 14, 15, 16, 17
T_LIST_QUICKLIST_2, T_STREAM_LISTPACKS_2, T_SET_LISTPACK, T_STREAM_LISTPACKS_3 = 18, 19, 20, 21
T_HASH_2 = 22
TYPE_LAST = 23  # 9.1.2 knows types up to HASH_2

NODE_PLAIN, NODE_PACKED = 1, 2
# the opcodes of a MODULE_2 value's fields (RDB_MODULE_OPCODE_*)
MODULE_OPCODE_EOF, MODULE_OPCODE_SINT, MODULE_OPCODE_UINT = 0, 1, 2
MODULE_OPCODE_FLOAT, MODULE_OPCODE_DOUBLE, MODULE_OPCODE_STRING = 3, 4, 5
STEP = 512  # elements written between two pauses of a background save
STREAM_DELETED, STREAM_SAMEFIELDS = 1, 2
U64 = (1 << 64) - 1
_NO_EXPIRY = -1


class PayloadError(Exception):
    """The footer: a version this server does not take, or a wrong checksum."""


class FormatError(Exception):
    """The body does not decode to a value (Valkey's "Bad data format")."""


class ShortRead(FormatError):
    """The data ends before what it declares: a cut file, or a length past its end."""


class EmptyKey(FormatError):
    """A container with no elements: read whole, but no value (a file's loader skips
    the key, as Valkey's does)."""


class ModuleError(FormatError):
    """A module value that does not load, with the message Valkey's loader logs for it."""


class ForeignTypeError(Exception):
    """A type too new for a payload in the foreign version range."""

    def __init__(self, rdb_type: int) -> None:
        super().__init__(rdb_type)
        self.rdb_type = rdb_type


@dataclass(frozen=True, slots=True)
class Limits:
    """The configuration the format depends on (read once per command)."""

    hash_entries: int = 512
    hash_value: int = 64
    set_intset_entries: int = 512
    set_entries: int = 128
    set_value: int = 64
    zset_entries: int = 128
    zset_value: int = 64
    list_size: int = -2
    compression: bool = True
    relaxed_versions: bool = False
    skip_checksum: bool = False  # DEBUG SET-SKIP-CHECKSUM-VALIDATION 1: RESTORE takes any CRC
    module_types: bool = True  # the emulated modules' types load (their modules are on)

    @classmethod
    def of(cls, config: Settings) -> Limits:
        return cls(
            hash_entries=config["hash-max-listpack-entries"],
            hash_value=config["hash-max-listpack-value"],
            set_intset_entries=min(config["set-max-intset-entries"], 1 << 30),
            set_entries=config["set-max-listpack-entries"],
            set_value=config["set-max-listpack-value"],
            zset_entries=config["zset-max-listpack-entries"],
            zset_value=config["zset-max-listpack-value"],
            list_size=config["list-max-listpack-size"],
            compression=bool(config["rdbcompression"]),
            relaxed_versions=config["rdb-version-check"] == "relaxed",
            module_types=bool(config["enable-stack-modules"]),
        )


# --- CRC64 (Jones, reflected) -----------------------------------------------------------------


def _crc_table() -> list[int]:
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 bit-reflected
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def _slice_tables() -> list[list[int]]:
    """Slicing-by-16: table k advances a byte through k more zero bytes."""
    tables = [_CRC_TABLE]
    for _ in range(15):
        prev = tables[-1]
        tables.append([(v >> 8) ^ _CRC_TABLE[v & 0xFF] for v in prev])
    return tables


_TABLES = _slice_tables()
_WORD = struct.Struct("<Q")
_BLOCK = struct.Struct("<Q8B")  # 16 bytes: the first 8 meet the CRC, the next 8 go as they are


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """Valkey's crc64 (Jones polynomial, reflected, no final xor), 16 bytes a step: the
    CRC folds into the block's first 8 bytes, and all 16 are looked up at once (an RDB
    file's CRC is most of its save and load time in pure Python)."""
    view = memoryview(data).cast("B")
    whole = len(view) // 16 * 16
    (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15) = _TABLES
    pack = _WORD.pack
    for word, c0, c1, c2, c3, c4, c5, c6, c7 in _BLOCK.iter_unpack(view[:whole]):
        b = pack(crc ^ word)
        crc = (s15[b[0]] ^ s14[b[1]] ^ s13[b[2]] ^ s12[b[3]] ^ s11[b[4]] ^ s10[b[5]] ^ s9[b[6]]
               ^ s8[b[7]] ^ s7[c0] ^ s6[c1] ^ s5[c2] ^ s4[c3] ^ s3[c4] ^ s2[c5] ^ s1[c6] ^ s0[c7])
    for byte in view[whole:]:
        crc = s0[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


# --- LZF ---------------------------------------------------------------------------------------

_LZF_HSIZE_MASK = 0xFFFF
_LZF_MAX_LIT = 32
_LZF_MAX_OFF = 1 << 13
_LZF_MAX_REF = (1 << 8) + (1 << 3)
LZF_SLICE = 1 << 15  # input bytes compressed between two pauses of lzf_steps


def _lzf_idx(h: int) -> int:
    return ((h >> 8) - h * 5) & _LZF_HSIZE_MASK


def lzf_compress(data: bytes, out_len: int) -> bytes | None:
    """liblzf's lzf_compress (VERY_FAST, HLOG 16) into at most `out_len` bytes; None when
    the result would not fit (Valkey then stores the string as it is)."""
    steps = lzf_steps(data, out_len)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: bytes | None = done.value
            return result


def lzf_steps(data: bytes, out_len: int) -> Generator[None, None, bytes | None]:
    """lzf_compress, pausing every `LZF_SLICE` input bytes (a background save compresses
    a long string between loop turns); the result is the generator's return value."""
    n = len(data)
    if not n or not out_len:
        return None
    htab: dict[int, int] = {}
    out = bytearray(out_len + 8)
    ip, op, lit = 0, 1, 0
    pause_at = LZF_SLICE
    hval = (data[0] << 8) | data[1] if n > 1 else data[0] << 8
    while ip < n - 2:
        if ip >= pause_at:
            pause_at = ip + LZF_SLICE
            yield
        hval = ((hval << 8) | data[ip + 2]) & 0xFFFFFFFF
        slot = ((hval >> 8) - hval * 5) & _LZF_HSIZE_MASK  # _lzf_idx, inline: once a byte
        ref = htab.get(slot)
        htab[slot] = ip
        if (
            ref is not None
            and ref > 0
            and ip - ref - 1 < _LZF_MAX_OFF
            and data[ref + 2] == data[ip + 2]
            and data[ref] == data[ip]
            and data[ref + 1] == data[ip + 1]
        ):
            off = ip - ref - 1
            maxlen = min(n - ip - 2, _LZF_MAX_REF)
            if op + 3 + 1 >= out_len and op - (not lit) + 3 + 1 >= out_len:
                return None
            out[op - lit - 1] = (lit - 1) & 0xFF
            op -= not lit
            length = 3  # the three bytes just compared (liblzf's do-while)
            while length < maxlen and data[ref + length] == data[ip + length]:
                length += 1
            length -= 2
            ip += 1
            if length < 7:
                out[op] = (off >> 8) + (length << 5)
                op += 1
            else:
                out[op] = (off >> 8) + (7 << 5)
                out[op + 1] = length - 7
                op += 2
            out[op] = off & 0xFF
            op += 2  # the back reference's last byte, then room for the next run's length
            lit = 0
            ip += length + 1
            if ip >= n - 2:
                break
            ip -= 2
            hval = (data[ip] << 8) | data[ip + 1]
            hval = ((hval << 8) | data[ip + 2]) & 0xFFFFFFFF
            htab[_lzf_idx(hval)] = ip
            ip += 1
            hval = ((hval << 8) | data[ip + 2]) & 0xFFFFFFFF
            htab[_lzf_idx(hval)] = ip
            ip += 1
        else:
            if op >= out_len:
                return None
            lit += 1
            out[op] = data[ip]
            op += 1
            ip += 1
            if lit == _LZF_MAX_LIT:
                out[op - lit - 1] = lit - 1
                lit = 0
                op += 1
    if op + 3 > out_len:
        return None
    while ip < n:
        lit += 1
        out[op] = data[ip]
        op += 1
        ip += 1
        if lit == _LZF_MAX_LIT:
            out[op - lit - 1] = lit - 1
            lit = 0
            op += 1
    out[op - lit - 1] = (lit - 1) & 0xFF
    op -= not lit
    return bytes(out[:op])


def lzf_decompress(data: bytes, out_len: int) -> bytes:
    """liblzf's lzf_decompress; the result must be exactly `out_len` bytes."""
    if not out_len:
        return b""  # liblzf fails with 0 bytes written, which is what was asked for
    out = bytearray()
    ip, n = 0, len(data)
    while ip < n:
        ctrl = data[ip]
        ip += 1
        if ctrl < 32:
            length = ctrl + 1
            if len(out) + length > out_len or ip + length > n:
                raise FormatError("lzf literal")
            out += data[ip : ip + length]
            ip += length
            continue
        length = ctrl >> 5
        if ip >= n:
            raise FormatError("lzf truncated")
        if length == 7:
            length += data[ip]
            ip += 1
            if ip >= n:
                raise FormatError("lzf truncated")
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1 - data[ip]
        ip += 1
        length += 2
        if len(out) + length > out_len or ref < 0:
            raise FormatError("lzf reference")
        distance = len(out) - ref
        if length <= distance:
            out += out[ref : ref + length]
        else:  # the copy overlaps what it makes: the last `distance` bytes repeated
            out += (out[ref:] * (length // distance + 1))[:length]
    if len(out) != out_len:
        raise FormatError("lzf length")
    return bytes(out)


# --- writing: lengths and strings ------------------------------------------------------------


def _len(n: int) -> bytes:
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes(((n >> 8) | 0x40, n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + (n & U64).to_bytes(8, "big")


def _int_encoding(value: int) -> bytes | None:
    if -(1 << 7) <= value < 1 << 7:
        return b"\xc0" + value.to_bytes(1, "little", signed=True)
    if -(1 << 15) <= value < 1 << 15:
        return b"\xc1" + value.to_bytes(2, "little", signed=True)
    if -(1 << 31) <= value < 1 << 31:
        return b"\xc2" + value.to_bytes(4, "little", signed=True)
    return None


def _string(data: bytes, compress: bool) -> bytes:
    """rdbSaveRawString: an integer encoding, LZF, or the bytes as they are."""
    if len(data) <= 11:
        number = try_int(data)
        if number is not None:
            encoded = _int_encoding(number)
            if encoded is not None:
                return encoded
    if compress and len(data) > 20:
        packed = lzf_compress(data, len(data) - 4)
        if packed is not None:
            return b"\xc3" + _len(len(packed)) + _len(len(data)) + packed
    return _len(len(data)) + data


def _ms(value: int) -> bytes:
    return struct.pack("<q", value)


# --- listpacks ------------------------------------------------------------------------------------


def _backlen(size: int) -> bytes:
    if size <= 127:
        return bytes((size,))
    if size < 16383:
        return bytes((size >> 7, (size & 127) | 128))
    if size < 2097151:
        return bytes((size >> 14, ((size >> 7) & 127) | 128, (size & 127) | 128))
    if size < 268435455:
        return bytes((size >> 21, ((size >> 14) & 127) | 128, ((size >> 7) & 127) | 128,
                      (size & 127) | 128))
    return bytes((size >> 28, ((size >> 21) & 127) | 128, ((size >> 14) & 127) | 128,
                  ((size >> 7) & 127) | 128, (size & 127) | 128))


def lp_int(value: int) -> bytes:
    """One listpack integer entry, backlen included."""
    if 0 <= value <= 127:
        enc = bytes((value,))
    elif -4096 <= value <= 4095:
        v = value & 0x1FFF
        enc = bytes((0xC0 | (v >> 8), v & 0xFF))
    elif -32768 <= value <= 32767:
        enc = b"\xf1" + value.to_bytes(2, "little", signed=True)
    elif -8388608 <= value <= 8388607:
        enc = b"\xf2" + value.to_bytes(3, "little", signed=True)
    elif -(1 << 31) <= value < 1 << 31:
        enc = b"\xf3" + value.to_bytes(4, "little", signed=True)
    else:
        enc = b"\xf4" + value.to_bytes(8, "little", signed=True)
    return enc + _backlen(len(enc))


_NUMBER_STARTS = frozenset(b"-0123456789")


def lp_entry(data: bytes) -> bytes:
    """One listpack entry for a string (lpAppend: a canonical integer is stored as one)."""
    if len(data) <= 20 and data and data[0] in _NUMBER_STARTS:
        number = try_int(data)
        if number is not None:
            return lp_int(number)
    size = len(data)
    if size < 64:
        enc = bytes((0x80 | size,)) + data
    elif size < 4096:
        enc = bytes((0xE0 | (size >> 8), size & 0xFF)) + data
    else:
        enc = b"\xf0" + size.to_bytes(4, "little") + data
    return enc + _backlen(len(enc))


def listpack(entries: Iterable[bytes], count: int) -> bytes:
    """A listpack of ready-made entries."""
    body = b"".join(entries)
    total = 6 + len(body) + 1
    return total.to_bytes(4, "little") + min(count, 65535).to_bytes(2, "little") + body + b"\xff"


def listpack_of(items: list[bytes]) -> bytes:
    return listpack(map(lp_entry, items), len(items))


# --- writing: the types ----------------------------------------------------------------------


def dump(value: Any, limits: Limits) -> bytes:
    """The DUMP payload of a value: type, body, version, CRC64."""
    body = bytearray(serialize(value, limits))
    body += RDB_VERSION.to_bytes(2, "little")
    body += crc64(body).to_bytes(8, "little")
    return bytes(body)


def serialize(value: Any, limits: Limits) -> bytes:
    """The RDB object (type byte and body) of a value (a counter INCR left: its bytes)."""
    if type(value) is int:
        value = b"%d" % value
    out = [bytes((object_type(value),))]
    for _ in iter_body(value, limits, out):
        pass
    return b"".join(out)


def object_type(value: Any) -> int:
    """The RDB type byte a value is written with: its encoding decides."""
    kind = type(value)
    if kind is bytes or kind is bytearray:
        return T_STRING
    if kind is ListValue:
        return T_LIST_QUICKLIST_2
    if kind is SetValue:
        return T_SET_INTSET if value.enc == INTSET else T_SET_LISTPACK if value.enc == LISTPACK else T_SET
    if kind is ZSet:
        return T_ZSET_2 if value.skiplist else T_ZSET_LISTPACK
    if kind is HashValue:
        return T_HASH_LISTPACK if not value.hashtable else T_HASH_2 if value.ttls else T_HASH
    if kind is StreamValue:
        return T_STREAM_LISTPACKS_3
    if isinstance(value, ModuleValue):
        return T_MODULE_2
    raise TypeError(f"cannot serialize {kind.__name__}")


def iter_body(value: Any, limits: Limits, out: list[bytes]) -> Iterator[None]:
    """Append the body of `value` (what follows its type byte) to `out` in pieces,
    pausing every STEP elements: a background save writes a big value a slice at a time."""
    if isinstance(value, (bytes, bytearray)):
        yield from iter_string(bytes(value), limits.compression, out)
        return
    writer = _WRITERS.get(type(value))
    if writer is None and isinstance(value, ModuleValue):
        writer = _write_module
    if writer is None:
        raise TypeError(f"cannot serialize {type(value).__name__}")
    yield from writer(value, limits, out)


def iter_string(data: bytes, compress: bool, out: list[bytes]) -> Iterator[None]:
    """rdbSaveRawString into `out`; a long string is compressed a slice at a time."""
    if not compress or len(data) < LZF_SLICE:
        out.append(_string(data, compress))
        return
    packed = yield from lzf_steps(data, len(data) - 4)
    if packed is None:
        out += [_len(len(data)), data]
    else:
        out += [b"\xc3" + _len(len(packed)) + _len(len(data)), packed]


def _write_list(value: ListValue, limits: Limits, out: list[bytes]) -> Iterator[None]:
    nodes: list[tuple[bool, list[bytes]]] = []
    yield from plan_list_nodes(list(value), limits.list_size, nodes)
    out.append(_len(len(nodes)))
    for plain, items in nodes:
        if plain:
            out.append(_len(NODE_PLAIN))
            yield from iter_string(items[0], limits.compression, out)
        else:
            out += [_len(NODE_PACKED), _string(listpack_of(items), limits.compression)]
        yield


_NEG_FILL_LIMITS = (4096, 8192, 16384, 32768, 65536)
_SAFETY_LIMIT = 8192
_SIZE_OVERHEAD = 8


def plan_list_nodes(items: list[bytes], fill: int, nodes: list[tuple[bool, list[bytes]]]) -> Iterator[None]:
    """Append the quicklist nodes of a list pushed at the tail to `nodes`, (plain,
    elements) each, pausing every STEP elements. A whole list that fits one listpack is
    one node (Valkey's listpack-encoded list)."""
    count_limit: int | None  # a positive fill counts elements; a negative one only bytes
    if fill >= 0:
        count_limit, size_limit = max(fill, 1), _SAFETY_LIMIT
    else:
        count_limit, size_limit = None, _NEG_FILL_LIMITS[min(-fill, 5) - 1]
    large = size_limit
    current: list[bytes] = []
    size = 0
    for done, item in enumerate(items, 1):
        if done % STEP == 0:
            yield
        if len(item) > large:
            if current:
                nodes.append((False, current))
                current, size = [], 0
            nodes.append((True, [item]))
            continue
        if current:
            new_size = size + len(item) + _SIZE_OVERHEAD
            full = new_size > size_limit or (count_limit is not None and len(current) + 1 > count_limit)
            if full:
                nodes.append((False, current))
                current, size = [], 0
        if not current:
            size = 7  # an empty listpack's bytes
        current.append(item)
        size += len(lp_entry(item))
    if current:
        nodes.append((False, current))


def _write_set(value: SetValue, limits: Limits, out: list[bytes]) -> Iterator[None]:
    c = limits.compression
    members = value.ordered()
    if value.enc == INTSET:
        out.append(_string(intset_blob([int(m) for m in members]), c))
        return
    if value.enc == LISTPACK:
        out.append(_string(listpack_of(members), c))
        return
    out.append(_len(len(members)))
    for done, member in enumerate(members, 1):
        out.append(_string(member, c))
        if done % STEP == 0:
            yield


def intset_blob(numbers: list[int]) -> bytes:
    """An intset of sorted integers, in the narrowest width that holds them all."""
    low, high = (min(numbers), max(numbers)) if numbers else (0, 0)
    if low >= -(1 << 15) and high < 1 << 15:
        width = 2
    elif low >= -(1 << 31) and high < 1 << 31:
        width = 4
    else:
        width = 8
    body = b"".join(n.to_bytes(width, "little", signed=True) for n in numbers)
    return width.to_bytes(4, "little") + len(numbers).to_bytes(4, "little") + body


def _write_zset(value: ZSet, limits: Limits, out: list[bytes]) -> Iterator[None]:
    c = limits.compression
    if not value.skiplist:
        entries: list[bytes] = []
        for score, member in value.sorted_keys():
            entries.append(lp_entry(member))
            entries.append(lp_entry(format_double(score)))  # -0 only from a loaded "-0" entry
        out.append(_string(listpack(entries, len(entries)), c))
        return
    keys = list(value.sorted_keys())
    out.append(_len(len(keys)))
    pack = struct.Struct("<d").pack
    for done, (score, member) in enumerate(reversed(keys), 1):  # greatest first, as Valkey
        out += [_string(member, c), pack(score)]
        if done % STEP == 0:
            yield


def _write_hash(value: HashValue, limits: Limits, out: list[bytes]) -> Iterator[None]:
    c = limits.compression
    if not value.hashtable:
        items = [part for pair in value.items() for part in pair]
        out.append(_string(listpack_of(items), c))
        return
    ttls = value.ttls
    out.append(_len(len(value)))
    for done, (field, data) in enumerate(value.mapping().items(), 1):
        out += [_string(field, c), _string(data, c)]
        if ttls:
            out.append(_ms(ttls.get(field, _NO_EXPIRY)))
        if done % STEP == 0:
            yield


def _stream_id(sid: tuple[int, int]) -> bytes:
    return sid[0].to_bytes(8, "big") + sid[1].to_bytes(8, "big")


def _s64(delta: int) -> int:
    delta &= U64
    return delta - (1 << 64) if delta >= 1 << 63 else delta


def stream_node_listpack(node: Node) -> bytes:
    """A stream node as Valkey's listpack: the master entry, then every entry (deleted
    ones flagged) with its ids as deltas from the master id."""
    master = node.master
    fields = node.fields
    parts = [lp_int(node.live), lp_int(node.deleted), lp_int(len(fields))]
    parts += map(lp_entry, fields)
    parts.append(lp_int(0))
    count = 4 + len(fields)
    for entry in node.entries:
        pairs = entry.pairs
        names = pairs[0::2]
        same = tuple(names) == fields
        flags = (STREAM_DELETED if entry.deleted else 0) | (STREAM_SAMEFIELDS if same else 0)
        parts += [lp_int(flags), lp_int(_s64(entry.id[0] - master[0])),
                  lp_int(_s64(entry.id[1] - master[1]))]
        numfields = len(names)
        if same:
            parts += map(lp_entry, pairs[1::2])
            pieces = numfields + 3
        else:
            parts.append(lp_int(numfields))
            parts += map(lp_entry, pairs)
            pieces = 2 * numfields + 4
        parts.append(lp_int(pieces))
        count += pieces + 1
    return listpack(parts, count)


def _write_stream(value: StreamValue, limits: Limits, out: list[bytes]) -> Iterator[None]:
    c = limits.compression
    out.append(_len(len(value.nodes)))
    for node in value.nodes:  # a node holds stream-node-max-entries at most: one a slice
        out += [_string(_stream_id(node.master), c), _string(stream_node_listpack(node), c)]
        yield
    out += [_len(value.length), _len(value.last_id[0]), _len(value.last_id[1]),
            _len(value.first_id[0]), _len(value.first_id[1]),
            _len(value.max_deleted[0]), _len(value.max_deleted[1]),
            _len(value.entries_added), _len(len(value.groups))]
    for name in sorted(value.groups):
        group = value.groups[name]
        out += [_string(name, c), _len(group.last_id[0]), _len(group.last_id[1]),
                _len(group.entries_read & U64), _len(len(group.pel))]
        for done, (sid, nack) in enumerate(group.pel.items(), 1):
            out += [_stream_id(sid), _ms(nack.delivery_time), _len(nack.delivery_count)]
            if done % STEP == 0:
                yield
        out.append(_len(len(group.consumers)))
        for consumer in group.sorted_consumers():
            out += [_string(consumer.name, c), _ms(consumer.seen_time),
                    _ms(consumer.active_time), _len(len(consumer.pel))]
            out += [_stream_id(sid) for sid in consumer.pel.ids]
            yield


_WRITERS: dict[type, Callable[[Any, Limits, list[bytes]], Iterator[None]]] = {
    ListValue: _write_list,
    SetValue: _write_set,
    ZSet: _write_zset,
    HashValue: _write_hash,
    StreamValue: _write_stream,
}


# --- reading -------------------------------------------------------------------------------------


def check_footer(payload: bytes, relaxed: bool = False, skip_checksum: bool = False) -> int:
    """verifyDumpPayload: the RDB version when it is accepted and the CRC matches
    (`skip_checksum`: not looked at, as Valkey's skip_checksum_validation)."""
    if len(payload) < 10:
        raise PayloadError
    version = int.from_bytes(payload[-10:-8], "little")
    if version < 1:
        raise PayloadError
    if not relaxed and (version > RDB_VERSION or FOREIGN_MIN <= version <= FOREIGN_MAX):
        raise PayloadError
    if not skip_checksum and crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        raise PayloadError
    return version


def restore(payload: bytes, limits: Limits) -> Any:
    """The value of a DUMP payload (footer checked first)."""
    version = check_footer(payload, limits.relaxed_versions, limits.skip_checksum)
    reader = Reader(payload)  # Valkey reads the whole argument: a body may run into the footer
    rdb_type = reader.byte()
    if not (0 <= rdb_type <= 7 or 9 <= rdb_type < TYPE_LAST):
        raise FormatError("type")
    if FOREIGN_MIN <= version <= FOREIGN_MAX and rdb_type >= FOREIGN_TYPE_MIN:
        raise ForeignTypeError(rdb_type)
    return deserialize(rdb_type, reader, limits)


class Reader:
    """Bounds-checked reads over a buffer; running out is a FormatError."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ShortRead(f"{n} bytes wanted at offset {self.pos}, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ShortRead(f"1 byte wanted at offset {self.pos}, none left")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def length(self) -> int:
        first = self.byte()
        kind = first >> 6
        if kind == 0:
            return first & 0x3F
        if kind == 1:
            return ((first & 0x3F) << 8) | self.byte()
        if kind == 3:  # an "encoded" marker read as a plain length is its low 6 bits
            return first & 0x3F
        if first == 0x80:
            return int.from_bytes(self.take(4), "big")
        if first == 0x81:
            return int.from_bytes(self.take(8), "big")
        raise FormatError("length encoding")

    def ms(self) -> int:
        return struct.unpack("<q", self.take(8))[0]

    def string(self) -> bytes:
        first = self.byte()
        if first >> 6 != 3:
            self.pos -= 1
            return self.take(self.length())
        enc = first & 0x3F
        if enc == 0:
            return b"%d" % int.from_bytes(self.take(1), "little", signed=True)
        if enc == 1:
            return b"%d" % int.from_bytes(self.take(2), "little", signed=True)
        if enc == 2:
            return b"%d" % int.from_bytes(self.take(4), "little", signed=True)
        if enc == 3:
            clen = self.length()
            size = self.length()
            # LZF expands at most 88x (a 3-byte reference to 264 bytes)
            if size > clen * 88 + 32:
                raise FormatError("lzf size")
            return lzf_decompress(self.take(clen), size)
        raise FormatError("string encoding")

    def double_text(self) -> float:
        size = self.byte()
        if size == 255:
            return -math.inf
        if size == 254:
            return math.inf
        if size == 253:
            return math.nan
        value = _strtod_prefix(self.take(size))  # sscanf("%lg")
        if value is None:
            raise FormatError("score")
        return value

    def done(self) -> bool:
        return self.pos >= len(self.data)


_STRTOD_PREFIX = re.compile(
    rb"[ \t\n\v\f\r]*[+-]?(?:inf(?:inity)?|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
    re.IGNORECASE,
)


def _strtod_prefix(text: bytes) -> float | None:
    """What strtod reads from the start of `text` (None when nothing parses)."""
    match = _STRTOD_PREFIX.match(text)
    return None if match is None else float(match.group().strip())


def _parse_score(text: bytes) -> float:
    """A listpack score as zzlStrtod reads it: strtod of the first 127 bytes, 0 when no
    number starts there."""
    value = _strtod_prefix(text[:127])
    return 0.0 if value is None else value


def deserialize(rdb_type: int, reader: Reader, limits: Limits) -> Any:
    """rdbLoadObject for one type byte: the value, or FormatError."""
    loader = _LOADERS.get(rdb_type)
    if loader is None:
        raise FormatError("unsupported type")
    return loader(reader, limits)


def _load_string(reader: Reader, limits: Limits) -> bytes:
    return reader.string()


def _nonempty(count: int) -> int:
    if count == 0:
        raise EmptyKey("empty key")
    return count


def _load_list(reader: Reader, limits: Limits) -> ListValue:
    count = _nonempty(reader.length())
    value = ListValue()
    for _ in range(count):
        value.append(reader.string())
    return value


def _load_quicklist(reader: Reader, limits: Limits, version: int) -> ListValue:
    nodes = _nonempty(reader.length())
    value = ListValue()
    for _ in range(nodes):
        container = NODE_PACKED
        if version == 2:
            container = reader.length()
            if container not in (NODE_PACKED, NODE_PLAIN):
                raise FormatError("quicklist container")
        data = reader.string()
        if not data:
            raise FormatError("empty node")
        if container == NODE_PLAIN:
            value.append(data)
        elif version == 2:
            value.extend(parse_listpack(data))
        else:
            value.extend(parse_ziplist(data))
    if not value:
        raise EmptyKey("empty key")
    return value


def _load_ziplist_list(reader: Reader, limits: Limits) -> ListValue:
    value = ListValue(parse_ziplist(reader.string()))
    if not value:
        raise EmptyKey("empty key")
    return value


# sets


def _set_from(members: list[bytes], enc: str) -> SetValue:
    value = SetValue(enc)
    for member in members:
        if member in value:
            raise FormatError("duplicate set member")
        value._insert(member)  # the encoding is decided by the caller, as the loader does
    return value


def _load_set(reader: Reader, limits: Limits) -> SetValue:
    count = _nonempty(reader.length())
    enc = INTSET if count <= limits.set_intset_entries else HASHTABLE
    value = SetValue(enc)
    longest = 0
    for _ in range(count):
        member = reader.string()
        longest = max(longest, len(member))
        if member in value:
            raise FormatError("duplicate set member")
        if value.enc == INTSET and not is_integer(member):
            fits = len(value) < limits.set_entries and longest <= limits.set_value
            value._convert(LISTPACK if fits else HASHTABLE)
        if value.enc == LISTPACK and not (
            len(value) < limits.set_entries and len(member) <= limits.set_value
        ):
            value._convert(HASHTABLE)
        value._insert(member)
    return value


def _load_intset(reader: Reader, limits: Limits) -> SetValue:
    numbers = parse_intset(reader.string())
    members = [b"%d" % n for n in numbers]
    enc = INTSET if len(members) <= limits.set_intset_entries else HASHTABLE
    return _set_from(members, enc)


def _load_set_listpack(reader: Reader, limits: Limits) -> SetValue:
    members = parse_listpack(reader.string())
    _nonempty(len(members))
    return _set_from(members, LISTPACK if len(members) <= limits.set_entries else HASHTABLE)


# sorted sets


def _zset_from(pairs: list[tuple[bytes, float]], skiplist: bool, as_read: bool = False) -> ZSet:
    """`as_read`: the scores as a loaded listpack holds them (its "-0" stays -0); else as
    the encoding stores a new score."""
    value = ZSet(skiplist)
    scores: dict[bytes, float] = {}
    for member, score in pairs:
        if math.isnan(score):
            raise FormatError("nan score")
        if member in scores:
            raise FormatError("duplicate zset member")
        scores[member] = score if as_read else value._stored(score)
    value.load(list(scores.items()))
    return value


def _load_zset(reader: Reader, limits: Limits, binary: bool) -> ZSet:
    count = _nonempty(reader.length())
    pairs = []
    for _ in range(count):
        member = reader.string()
        if binary:
            score = struct.unpack("<d", reader.take(8))[0]
        else:
            score = reader.double_text()
        if math.isnan(score):
            raise FormatError("nan score")
        pairs.append((member, score))
    longest = max(len(m) for m, _ in pairs)
    listpack_fits = count <= limits.zset_entries and longest <= limits.zset_value
    return _zset_from(pairs, skiplist=not listpack_fits)


def _score_pairs(items: list[Any]) -> list[tuple[bytes, float]]:
    """(member, score) of a listpack's or ziplist's items. An integer entry (a listpack
    read with raw_ints) is its own score: strtod of its digits gives the same double."""
    if len(items) % 2:
        raise FormatError("odd zset listpack")
    return [(_as_bytes(items[i]), float(score) if isinstance(score := items[i + 1], int) else _parse_score(score))
            for i in range(0, len(items), 2)]


def _load_zset_listpack(reader: Reader, limits: Limits, ziplist: bool = False) -> ZSet:
    data = reader.string()
    pairs = _score_pairs(parse_ziplist(data) if ziplist else parse_listpack(data, raw_ints=True))
    _nonempty(len(pairs))
    return _zset_from(pairs, skiplist=len(pairs) > limits.zset_entries, as_read=True)


# hashes


def _hash_from(items: list[bytes], limits: Limits) -> HashValue:
    if len(items) % 2:
        raise FormatError("odd hash listpack")
    value = HashValue()
    for i in range(0, len(items), 2):
        if not value.set(items[i], items[i + 1]):
            raise FormatError("duplicate hash field")
    _nonempty(len(value))
    if len(value) > limits.hash_entries:
        value.to_hashtable()
    return value


def _load_hash(reader: Reader, limits: Limits, with_ttls: bool) -> HashValue:
    count = _nonempty(reader.length())
    value = HashValue()
    if with_ttls or count > limits.hash_entries:
        value.to_hashtable()
    for _ in range(count):
        field = reader.string()
        data = reader.string()
        expiry = reader.ms() if with_ttls else _NO_EXPIRY
        if expiry < _NO_EXPIRY:
            raise FormatError("field expiry")
        if not value.set(field, data):
            raise FormatError("duplicate hash field")
        if not value.hashtable and (len(field) > limits.hash_value or len(data) > limits.hash_value):
            value.to_hashtable()
        if expiry != _NO_EXPIRY:
            value.set_ttl(field, expiry)
    return value


def _load_hash_zipmap(reader: Reader, limits: Limits) -> HashValue:
    items = parse_zipmap(reader.string())
    value = _hash_from(items, limits)
    if any(len(item) > limits.hash_value for item in items):
        value.to_hashtable()
    return value


# streams


def _raw_id(raw: bytes) -> tuple[int, int]:
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def _load_stream(reader: Reader, limits: Limits, version: int) -> StreamValue:
    value = StreamValue()
    for _ in range(reader.length()):
        key = reader.string()
        if len(key) != 16:
            raise FormatError("stream node key")
        master = _raw_id(key)
        if value.masters and master <= value.masters[-1]:
            raise FormatError("stream node order")
        node = parse_stream_node(reader.string(), master)
        if value.nodes and node.ids and value.nodes[-1].ids and node.ids[0] <= value.nodes[-1].ids[-1]:
            raise FormatError("stream node order")
        value.nodes.append(node)
        value.masters.append(master)
    live = sum(node.live for node in value.nodes)
    value.length = reader.length()
    if value.length != live:
        raise FormatError("stream length")
    value.last_id = (reader.length(), reader.length())
    if version >= 2:
        value.first_id = (reader.length(), reader.length())
        value.max_deleted = (reader.length(), reader.length())
        value.entries_added = reader.length()
    else:
        value.entries_added = value.length
        value.first_id = value.first_valid_id() or (U64, U64)  # streamGetEdgeID of an empty one
    if value.last_id[0] > U64 or value.nodes and value.nodes[-1].ids[-1] > value.last_id:
        raise FormatError("stream last id")
    for _ in range(reader.length()):
        name = reader.string()
        if name in value.groups:
            raise FormatError("duplicate group")
        last_id = (reader.length(), reader.length())
        if version >= 2:
            entries_read = reader.length()
            if entries_read == U64:
                entries_read = INVALID_ENTRIES_READ
            elif entries_read > 1 << 63:
                raise FormatError("entries read")
        else:
            entries_read = value.distance_from_first(last_id)
        group = Group(last_id, entries_read)
        value.groups[name] = group
        _load_group_pels(reader, group, version)
    return value


def _load_group_pels(reader: Reader, group: Group, version: int) -> None:
    for _ in range(reader.length()):
        sid = _raw_id(reader.take(16))
        nack = Nack(reader.ms(), None)
        nack.delivery_count = reader.length()
        if sid in group.pel:
            raise FormatError("duplicate pel entry")
        group.pel.add(sid, nack)
    for _ in range(reader.length()):
        name = reader.string()
        if name in group.consumers:
            raise FormatError("duplicate consumer")
        seen = reader.ms()
        consumer = Consumer(name, seen, group.pel)
        consumer.active_time = reader.ms() if version >= 3 else seen
        group.consumers[name] = consumer
        for _ in range(reader.length()):
            sid = _raw_id(reader.take(16))
            owned = group.pel.get(sid)
            if owned is None or owned.consumer is not None:
                raise FormatError("consumer pel entry")
            owned.consumer = consumer
            consumer.pel.add(sid)
    for _, nack in group.pel.items():
        if nack.consumer is None:
            raise FormatError("pel entry without consumer")


def parse_stream_node(data: bytes, master: tuple[int, int]) -> Node:
    """A stream node from its listpack, checked as streamValidateListpackIntegrity does."""
    items = parse_listpack(data, raw_ints=True)
    pos = 0

    def nxt() -> Any:
        nonlocal pos
        if pos >= len(items):
            raise FormatError("stream listpack truncated")
        item = items[pos]
        pos += 1
        return item

    def nxt_int() -> int:
        item = nxt()
        if not isinstance(item, int):
            raise FormatError("stream listpack integer")
        return item

    live, deleted, master_count = nxt_int(), nxt_int(), nxt_int()
    if master_count < 0:
        raise FormatError("stream master fields")
    fields = tuple(_as_bytes(nxt()) for _ in range(master_count))
    if nxt_int() != 0:
        raise FormatError("stream master terminator")
    node = Node(master, fields)
    seen_live = seen_deleted = 0
    previous: tuple[int, int] | None = None
    while pos < len(items):
        flags = nxt_int()
        ms = (master[0] + nxt_int()) & U64
        seq = (master[1] + nxt_int()) & U64
        sid = (ms, seq)
        if sid < master or (previous is not None and sid <= previous):
            raise FormatError("stream entry order")
        previous = sid
        if flags & STREAM_SAMEFIELDS:
            names = fields
            values = [_as_bytes(nxt()) for _ in fields]
            pieces = len(fields) + 3
        else:
            count = nxt_int()
            if count < 0 or count > len(items):
                raise FormatError("stream field count")
            names_values = [_as_bytes(nxt()) for _ in range(2 * count)]
            names, values = tuple(names_values[0::2]), names_values[1::2]
            pieces = 2 * count + 4
        if nxt_int() != pieces:
            raise FormatError("stream lp-count")
        pairs = tuple(part for pair in zip(names, values, strict=True) for part in pair)
        node.add(sid, pairs)
        if flags & STREAM_DELETED:
            entry = node.entries[-1]
            entry.deleted = True
            node.live -= 1
            node.deleted += 1
            seen_deleted += 1
        else:
            seen_live += 1
    if seen_live != live or seen_deleted != deleted or not node.entries:
        raise FormatError("stream node counts")
    return node


def _as_bytes(item: Any) -> bytes:
    return b"%d" % item if isinstance(item, int) else item


# --- listpack, ziplist, intset, zipmap parsing ---------------------------------------------------


def parse_listpack(data: bytes, raw_ints: bool = False) -> list[Any]:
    """The elements of a listpack (integers as decimal text unless `raw_ints`)."""
    size = len(data)
    if size < 7 or int.from_bytes(data[0:4], "little") != size or data[-1] != 0xFF:
        raise FormatError("listpack header")
    declared = int.from_bytes(data[4:6], "little")
    out: list[Any] = []
    append = out.append
    pos = 6
    end = size - 1
    while pos < end:
        first = data[pos]
        if first < 0xC0:  # the commonest: a 7-bit integer, or a string of up to 63 bytes
            if first < 0x80:
                append(first if raw_ints else b"%d" % first)
                encoded = 1
            else:
                encoded = 1 + (first & 0x3F)
                if pos + encoded > end:
                    raise FormatError("listpack string")
                append(data[pos + 1:pos + encoded])
            if pos + encoded >= end or data[pos + encoded] != encoded:  # a 1-byte backlen
                raise FormatError("listpack backlen")
            pos += encoded + 1
            continue
        item, encoded = _listpack_entry(data, pos, end, first, raw_ints)
        back = _backlen(encoded)
        if data[pos + encoded : pos + encoded + len(back)] != back:
            raise FormatError("listpack backlen")
        pos += encoded + len(back)
        append(item)
    if pos != end or (declared != 65535 and declared != len(out)):
        raise FormatError("listpack count")
    return out


_LP_INT_WIDTHS = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}


def _listpack_entry(data: bytes, pos: int, end: int, first: int, raw_ints: bool) -> tuple[Any, int]:
    """A listpack entry of the longer encodings at `pos`: (element, encoded size)."""
    value: int | None = None
    if first < 0xE0:
        if pos + 2 > end:
            raise FormatError("listpack entry")
        raw = ((first & 0x1F) << 8) | data[pos + 1]
        value, head = (raw - 8192 if raw >= 4096 else raw), 2
    elif first < 0xF0:
        if pos + 2 > end:
            raise FormatError("listpack entry")
        head, length = 2, ((first & 0x0F) << 8) | data[pos + 1]
    elif first == 0xF0:
        if pos + 5 > end:
            raise FormatError("listpack entry")
        head, length = 5, int.from_bytes(data[pos + 1 : pos + 5], "little")
    elif first in _LP_INT_WIDTHS:
        width = _LP_INT_WIDTHS[first]
        if pos + 1 + width > end:
            raise FormatError("listpack entry")
        value = int.from_bytes(data[pos + 1 : pos + 1 + width], "little", signed=True)
        head = 1 + width
    else:
        raise FormatError("listpack encoding")
    if value is not None:
        return (value if raw_ints else b"%d" % value), head
    if pos + head + length > end:
        raise FormatError("listpack string")
    return data[pos + head : pos + head + length], head + length


def parse_ziplist(data: bytes) -> list[bytes]:
    """The elements of a ziplist (RDB 7 and older lists, hashes, sorted sets)."""
    size = len(data)
    if size < 11 or int.from_bytes(data[0:4], "little") != size or data[-1] != 0xFF:
        raise FormatError("ziplist header")
    tail = int.from_bytes(data[4:8], "little")
    declared = int.from_bytes(data[8:10], "little")
    out: list[bytes] = []
    pos, end, prev_size, last = 10, size - 1, 0, 10
    while pos < end:
        start = pos
        if data[pos] < 254:
            prevlen = data[pos]
            pos += 1
        else:
            if data[pos] == 255 or pos + 5 > end:
                raise FormatError("ziplist prevlen")
            prevlen = int.from_bytes(data[pos + 1 : pos + 5], "little")
            pos += 5
        if prevlen != prev_size:
            raise FormatError("ziplist prevlen")
        if pos >= end:
            raise FormatError("ziplist entry")
        enc = data[pos]
        kind = enc >> 6
        if kind == 0:
            length, pos = enc & 0x3F, pos + 1
            item = None
        elif kind == 1:
            if pos + 2 > end:
                raise FormatError("ziplist entry")
            length, pos = ((enc & 0x3F) << 8) | data[pos + 1], pos + 2
            item = None
        elif enc == 0x80:
            if pos + 5 > end:
                raise FormatError("ziplist entry")
            length, pos = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5
            item = None
        else:
            widths = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}
            if enc in widths:
                width = widths[enc]
                if pos + 1 + width > end:
                    raise FormatError("ziplist entry")
                item = b"%d" % int.from_bytes(data[pos + 1 : pos + 1 + width], "little", signed=True)
                pos += 1 + width
            elif 0xF1 <= enc <= 0xFD:
                item = b"%d" % ((enc & 0x0F) - 1)
                pos += 1
            else:
                raise FormatError("ziplist encoding")
            length = 0
        if item is None:
            if pos + length > end:
                raise FormatError("ziplist string")
            item = data[pos : pos + length]
            pos += length
        out.append(item)
        last = start
        prev_size = pos - start
    if pos != end or (out and tail != last) or (declared != 65535 and declared != len(out)):
        raise FormatError("ziplist count")
    return out


def parse_intset(data: bytes) -> list[int]:
    if len(data) < 8:
        raise FormatError("intset header")
    width = int.from_bytes(data[0:4], "little")
    count = int.from_bytes(data[4:8], "little")
    if width not in (2, 4, 8) or len(data) != 8 + width * count or count == 0:
        raise FormatError("intset size")
    numbers = [int.from_bytes(data[8 + i * width : 8 + (i + 1) * width], "little", signed=True)
               for i in range(count)]
    if any(a >= b for a, b in zip(numbers, numbers[1:], strict=False)):
        raise FormatError("intset order")
    return numbers


def parse_zipmap(data: bytes) -> list[bytes]:
    """The fields and values of a zipmap (Redis 2.4 hashes)."""
    pos, out = 1, []
    n = len(data)

    def length() -> int:
        nonlocal pos
        if pos >= n:
            raise FormatError("zipmap truncated")
        first = data[pos]
        if first < 254:
            pos += 1
            return first
        if first == 254 and pos + 5 <= n:
            pos += 5
            size = int.from_bytes(data[pos - 4 : pos], "little")
            if size < 254:  # a short length in the long form (Valkey refuses it: CVE-2026-25243)
                raise FormatError("zipmap overlong length")
            return size
        raise FormatError("zipmap length")

    while True:
        if pos >= n:
            raise FormatError("zipmap truncated")
        if data[pos] == 255:
            break
        size = length()
        if pos + size > n:
            raise FormatError("zipmap key")
        out.append(data[pos : pos + size])
        pos += size
        size = length()
        if pos >= n:
            raise FormatError("zipmap truncated")
        free = data[pos]
        pos += 1
        if pos + size + free > n:
            raise FormatError("zipmap value")
        out.append(data[pos : pos + size])
        pos += size + free
    if pos != n - 1:
        raise FormatError("zipmap end")
    return out


def _write_module(value: ModuleValue, limits: Limits, out: list[bytes]) -> Iterator[None]:
    """rdbSaveObject's module value: the type's id, the fields the module saves (its
    payload as it is, or as one module string), the EOF opcode."""
    out.append(_len(module_type_id(value.TYPE_NAME, value.ENCODING_VERSION)))
    if value.MODULE_IO:
        yield from _iter_module_io(value.payload(), limits.compression, out)
    else:
        out.append(_len(MODULE_OPCODE_STRING))
        yield from iter_string(value.payload(), limits.compression, out)
    out.append(_len(MODULE_OPCODE_EOF))


def _iter_module_io(payload: bytes, compress: bool, out: list[bytes]) -> Iterator[None]:
    """A RedisModule_Save* payload's fields into `out`, each string as rdbSaveRawString
    writes it (an integer encoding, or LZF past 20 bytes under rdbcompression), as
    RedisModule_SaveStringBuffer does."""
    reader = Reader(payload)
    while not reader.done():
        start = reader.pos
        opcode = reader.length()
        if opcode == MODULE_OPCODE_STRING:
            out.append(_len(MODULE_OPCODE_STRING))
            yield from iter_string(reader.string(), compress, out)
            continue
        _skip_module_field(reader, opcode)
        out.append(payload[start:reader.pos])


def _skip_module_field(reader: Reader, opcode: int) -> None:
    if opcode in (MODULE_OPCODE_SINT, MODULE_OPCODE_UINT):
        reader.length()
    elif opcode == MODULE_OPCODE_FLOAT:
        reader.take(4)
    elif opcode == MODULE_OPCODE_DOUBLE:
        reader.take(8)
    elif opcode == MODULE_OPCODE_STRING:
        reader.string()
    else:
        raise FormatError("module opcode")


def _module_fields(reader: Reader) -> bytes:
    """The raw fields of a module value up to its EOF opcode (consumed), as Valkey's
    checker walks them: each an opcode, then a length, a float, a double or a string."""
    start = reader.pos
    while True:
        end = reader.pos
        opcode = reader.length()
        if opcode == MODULE_OPCODE_EOF:
            return bytes(reader.data[start:end])
        _skip_module_field(reader, opcode)


def _load_module(reader: Reader, limits: Limits) -> ModuleValue:
    """A MODULE_2 value of a registered type whose module is on; ModuleError otherwise."""
    name, encoding_version = module_type_of_id(reader.length())
    kind = MODULE_TYPES.get(name) if limits.module_types else None
    if kind is None:
        raise ModuleError(f"The RDB file contains module data I can't load: no matching module type '{name}'")
    module = kind.MODULE_NAME or name
    not_loaded = ModuleError(f"The RDB file contains module data for the module type '{module}', that "
                             "the responsible module is not able to load. Check for modules log above "
                             "for additional clues.")
    if kind.MODULE_IO:
        payload = _module_fields(reader)
    else:
        if reader.length() != MODULE_OPCODE_STRING:
            raise not_loaded
        payload = reader.string()
        if reader.length() != MODULE_OPCODE_EOF:
            raise ModuleError(f"The RDB file contains module data for the module '{module}' that is "
                              "not terminated by the proper module value EOF marker")
    try:
        return kind.from_payload(payload, encoding_version)
    except ValueError:
        raise not_loaded from None


def _not_loadable(reader: Reader, limits: Limits) -> Any:
    raise ModuleError("Pre-release module format not supported")


_LOADERS: dict[int, Callable[[Reader, Limits], Any]] = {
    T_STRING: _load_string,
    T_LIST: _load_list,
    T_SET: _load_set,
    T_ZSET: lambda r, lim: _load_zset(r, lim, binary=False),
    T_HASH: lambda r, lim: _load_hash(r, lim, with_ttls=False),
    T_ZSET_2: lambda r, lim: _load_zset(r, lim, binary=True),
    T_MODULE_PRE_GA: _not_loadable,
    T_MODULE_2: _load_module,
    T_HASH_ZIPMAP: _load_hash_zipmap,
    T_LIST_ZIPLIST: _load_ziplist_list,
    T_SET_INTSET: _load_intset,
    T_ZSET_ZIPLIST: lambda r, lim: _load_zset_listpack(r, lim, ziplist=True),
    T_HASH_ZIPLIST: lambda r, lim: _hash_from(parse_ziplist(r.string()), lim),
    T_LIST_QUICKLIST: lambda r, lim: _load_quicklist(r, lim, 1),
    T_STREAM_LISTPACKS: lambda r, lim: _load_stream(r, lim, 1),
    T_HASH_LISTPACK: lambda r, lim: _hash_from(parse_listpack(r.string()), lim),
    T_ZSET_LISTPACK: _load_zset_listpack,
    T_LIST_QUICKLIST_2: lambda r, lim: _load_quicklist(r, lim, 2),
    T_STREAM_LISTPACKS_2: lambda r, lim: _load_stream(r, lim, 2),
    T_SET_LISTPACK: _load_set_listpack,
    T_STREAM_LISTPACKS_3: lambda r, lim: _load_stream(r, lim, 3),
    T_HASH_2: lambda r, lim: _load_hash(r, lim, with_ttls=True),
}
