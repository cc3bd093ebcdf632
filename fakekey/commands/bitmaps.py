"""Bitmap commands: bits of a string value, bit 0 being the top bit of the first byte.

Writes change the string in place, so the value becomes a `bytearray` ("raw").
"""

from __future__ import annotations

import re
from typing import Any

from fakekey.commands.args import SYNTAX, WRONGTYPE, parse_int, try_int
from fakekey.commands.strings import padded
from fakekey.core.client import Client
from fakekey.core.registry import command, keys_range
from fakekey.resp.replies import ReplyError

G = "bitmap"

BAD_OFFSET = ReplyError("ERR bit offset is not an integer or out of range")
BAD_BIT = ReplyError("ERR bit is not an integer or out of range")
BAD_TYPE = ReplyError(
    "ERR Invalid bitfield type. Use something like i16 u8. "
    "Note that u64 is not supported but i64 is."
)
BAD_OVERFLOW = ReplyError("ERR Invalid OVERFLOW type specified")

_U64 = 1 << 64


def _wrap_int64(value: int) -> int:
    """C's two's complement wrap of a long long product."""
    return (value + (1 << 63)) % _U64 - (1 << 63)


def bit_offset(c: Client, raw: bytes, bits: int = 0) -> int:
    """getBitOffsetFromArgument: a bit offset below proto-max-bulk-len bytes; with
    `bits`, "#N" means N * bits (multiplied as C does, wrapping at 64 bits)."""
    use_hash = bits > 0 and raw[:1] == b"#"
    value = try_int(raw[1:] if use_hash else raw)
    if value is None:
        raise BAD_OFFSET
    if use_hash:
        value = _wrap_int64(value * bits)
    if value < 0 or (value >> 3) >= c.state.config["proto-max-bulk-len"]:
        raise BAD_OFFSET
    return value


def bits_for_write(c: Client, key: bytes, max_bit: int) -> tuple[bytearray, bool, bool]:
    """lookupStringForBitCommand: the value, zero-padded so `max_bit` exists.

    Answers (bits, created, grew). A created value is not stored yet: the caller stores
    it through the funnel once it knows what to notify."""
    size = (max_bit >> 3) + 1
    value = c.db.lookup_string(key)
    if value is None:
        return bytearray(size), True, True
    grew = len(value) < size
    return padded(c, key, value, size), False, grew


def store_bits(c: Client, key: bytes, data: bytearray, created: bool, changed: bool) -> None:
    if created:
        c.db.set_value(key, data, event="setbit" if changed else None, klass="$")
    elif changed:
        c.db.written(key, "setbit", "$")


# --- SETBIT / GETBIT ------------------------------------------------------------------------


@command("setbit", 4, "write denyoom", keys=keys_range(1, flags="RW access update"),
         acl="bitmap", group=G, since="2.2.0",
         summary="Sets or clears one bit of a string value; answers the bit's old value.")
def setbit(c: Client, argv: list[bytes]) -> Any:
    offset = bit_offset(c, argv[2])
    on = parse_int(argv[3], BAD_BIT)
    if on & ~1:
        raise BAD_BIT
    data, created, grew = bits_for_write(c, argv[1], offset)
    byte, shift = offset >> 3, 7 - (offset & 7)
    old = (data[byte] >> shift) & 1
    if grew or old != on:
        data[byte] = (data[byte] & ~(1 << shift)) | (on << shift)
        store_bits(c, argv[1], data, created, True)
    return old


@command("getbit", 3, "readonly fast", keys=keys_range(1, flags="RO access"), acl="bitmap",
         group=G, since="2.2.0", summary="Answers one bit of a string value.")
def getbit(c: Client, argv: list[bytes]) -> Any:
    offset = bit_offset(c, argv[2])
    value = c.db.lookup_string(argv[1])
    byte = offset >> 3
    if value is None or byte >= len(value):
        return 0
    return (value[byte] >> (7 - (offset & 7))) & 1


# --- ranges of BITCOUNT / BITPOS ----------------------------------------------------------


def _unit(raw: bytes) -> bool:
    """BIT or BYTE -> whether the range counts bits."""
    unit = raw.upper()
    if unit == b"BIT":
        return True
    if unit == b"BYTE":
        return False
    raise SYNTAX


def _clamp(start: int, end: int, total: int) -> tuple[int, int]:
    """Negative indexes count from the end; the range is cut to [0, total - 1]."""
    if start < 0:
        start = max(total + start, 0)
    if end < 0:
        end = max(total + end, 0)
    return start, min(end, total - 1)


def _bit_range(start: int, end: int, length: int, in_bits: bool) -> tuple[int, int]:
    """A BYTE or BIT range -> the first and last bit it covers (empty if first > last)."""
    if in_bits:
        return _clamp(start, end, length * 8)
    start, end = _clamp(start, end, length)
    return start * 8, end * 8 + 7


@command("bitcount", -2, "readonly", keys=keys_range(1, flags="RO access"), acl="bitmap",
         group=G, since="2.6.0", complexity="O(N)",
         summary="Counts the set bits of a string value, optionally in a range.")
def bitcount(c: Client, argv: list[bytes]) -> Any:
    argc = len(argv)
    if argc > 5:
        raise SYNTAX
    if argc == 2:
        value = c.db.lookup_string(argv[1])
        return 0 if value is None else int.from_bytes(value, "big").bit_count()
    start = parse_int(argv[2])
    in_bits = _unit(argv[4]) if argc == 5 else False
    end = parse_int(argv[3]) if argc >= 4 else None
    value = c.db.lookup_string(argv[1])
    if value is None:
        return 0
    if end is None:
        end = len(value) - 1
    elif start < 0 and end < 0 and start > end:
        return 0
    first, last = _bit_range(start, end, len(value), in_bits)
    if first > last:
        return 0
    return _count_bits(value, first, last)


def _count_bits(data: bytes | bytearray, first: int, last: int) -> int:
    """Set bits from bit `first` to bit `last`, both included."""
    chunk = int.from_bytes(data[first >> 3 : (last >> 3) + 1], "big")
    chunk >>= 7 - (last & 7)  # now bit `last` is the lowest
    return (chunk & ((1 << (last - first + 1)) - 1)).bit_count()


_NOT_ZERO = re.compile(rb"[^\x00]")
_NOT_ONES = re.compile(rb"[^\xff]")


@command("bitpos", -3, "readonly", keys=keys_range(1, flags="RO access"), acl="bitmap",
         group=G, since="2.8.7", complexity="O(N)",
         summary="Finds the first set or clear bit of a string value, optionally in a range.")
def bitpos(c: Client, argv: list[bytes]) -> Any:
    bit = parse_int(argv[2])
    if bit not in (0, 1):
        raise ReplyError("ERR The bit argument must be 1 or 0.")
    argc = len(argv)
    if argc > 6:
        raise SYNTAX
    start, end, in_bits = 0, -1, False
    if argc >= 4:
        start = parse_int(argv[3])
        if argc == 6:
            in_bits = _unit(argv[5])
        if argc >= 5:
            end = parse_int(argv[4])
    value = c.db.lookup_string(argv[1])
    if value is None:
        return -1 if bit else 0  # a missing key is an endless run of zeros
    first, last = _bit_range(start, end, len(value), in_bits)
    if first > last:
        return -1
    found = _find_bit(value, bit, first, last)
    if found is not None:
        return found
    if bit == 0 and argc < 5:
        return last + 1  # no end given: the string continues with zeros
    return -1


def _find_bit(data: bytes | bytearray, bit: int, first: int, last: int) -> int | None:
    """The position of the first `bit` between bits `first` and `last`, or None."""
    pos = _find_in_byte(data[first >> 3], bit, first & 7, 7 if first >> 3 < last >> 3 else last & 7)
    if pos is not None:
        return (first & ~7) + pos
    first_byte, last_byte = (first >> 3) + 1, last >> 3
    if first_byte > last_byte:
        return None
    pattern = _NOT_ZERO if bit else _NOT_ONES
    match = pattern.search(data, first_byte, last_byte)  # whole bytes before the last
    if match is not None:
        index = match.start()
        found = _find_in_byte(data[index], bit, 0, 7)
        assert found is not None  # the pattern matched a byte holding such a bit
        return index * 8 + found
    pos = _find_in_byte(data[last_byte], bit, 0, last & 7)
    return None if pos is None else last_byte * 8 + pos


def _find_in_byte(byte: int, bit: int, lo: int, hi: int) -> int | None:
    for k in range(lo, hi + 1):
        if (byte >> (7 - k)) & 1 == bit:
            return k
    return None


# --- BITOP ------------------------------------------------------------------------------------


@command("bitop", -4, "write denyoom", acl="bitmap", group=G, since="2.6.0", complexity="O(N)",
         keys=(keys_range(2, flags="OW update"), keys_range(3, -1, flags="RO access")),
         summary="Combines string values bit by bit (AND, OR, XOR, NOT) into a key.")
def bitop(c: Client, argv: list[bytes]) -> Any:
    op = argv[1].upper()
    if op not in (b"AND", b"OR", b"XOR", b"NOT"):
        raise SYNTAX
    if op == b"NOT" and len(argv) != 4:
        raise ReplyError("ERR BITOP NOT must be called with a single source key.")
    sources = []
    for key in argv[3:]:
        value = c.db.lookup(key)
        if value is not None and type(value) is not bytes and type(value) is not bytearray:
            raise WRONGTYPE
        sources.append(b"" if value is None else value)
    size = max(len(s) for s in sources)
    dest = argv[2]
    if size == 0:
        c.db.delete(dest)
        return 0
    # Each source as one big integer, zero-padded on the right to the longest.
    numbers = [int.from_bytes(s, "big") << (8 * (size - len(s))) for s in sources]
    result = numbers[0]
    if op == b"NOT":
        result ^= (1 << (8 * size)) - 1
    for number in numbers[1:]:
        if op == b"AND":
            result &= number
        elif op == b"OR":
            result |= number
        else:
            result ^= number
    c.db.set_value(dest, bytearray(result.to_bytes(size, "big")), event="set", klass="$")
    return size


# --- BITFIELD ---------------------------------------------------------------------------------

WRAP, SAT, FAIL = 0, 1, 2
_OVERFLOWS = {b"WRAP": WRAP, b"SAT": SAT, b"FAIL": FAIL}
_OPS = {b"GET": 2, b"SET": 3, b"INCRBY": 3}  # arguments each takes


class FieldOp:
    __slots__ = ("name", "signed", "bits", "offset", "value", "overflow")

    def __init__(self, name: bytes, signed: bool, bits: int, offset: int, value: int,
                 overflow: int) -> None:
        self.name = name
        self.signed = signed
        self.bits = bits
        self.offset = offset
        self.value = value
        self.overflow = overflow


def _field_type(raw: bytes) -> tuple[bool, int]:
    """"i<bits>" (1..64) or "u<bits>" (1..63)."""
    sign = raw[:1]
    bits = try_int(raw[1:])
    if sign not in (b"i", b"u") or bits is None or bits < 1 or bits > (64 if sign == b"i" else 63):
        raise BAD_TYPE
    return sign == b"i", bits


def parse_field_ops(c: Client, argv: list[bytes]) -> list[FieldOp]:
    ops: list[FieldOp] = []
    overflow = WRAP
    i, argc = 2, len(argv)
    while i < argc:
        name = argv[i].upper()
        remaining = argc - i - 1
        if name == b"OVERFLOW" and remaining >= 1:
            overflow = _OVERFLOWS.get(argv[i + 1].upper(), -1)
            if overflow < 0:
                raise BAD_OVERFLOW
            i += 2
            continue
        takes = _OPS.get(name)
        if takes is None or remaining < takes:
            raise SYNTAX
        signed, bits = _field_type(argv[i + 1])
        offset = bit_offset(c, argv[i + 2], bits)
        value = parse_int(argv[i + 3]) if name != b"GET" else 0
        ops.append(FieldOp(name, signed, bits, offset, value, overflow))
        i += takes + 1
    return ops


def read_field(data: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """The integer at `offset` (zeros past the end of the string)."""
    first, last = offset >> 3, (offset + bits - 1) >> 3
    width = (last - first + 1) * 8
    chunk = int.from_bytes(data[first : last + 1], "big")
    chunk <<= width - len(data[first : last + 1]) * 8  # pad a short read with zeros
    value = (chunk >> (width - (offset & 7) - bits)) & ((1 << bits) - 1)
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def write_field(data: bytearray, offset: int, bits: int, value: int) -> None:
    first, last = offset >> 3, (offset + bits - 1) >> 3
    width = (last - first + 1) * 8
    shift = width - (offset & 7) - bits
    mask = ((1 << bits) - 1) << shift
    chunk = int.from_bytes(data[first : last + 1], "big")
    chunk = (chunk & ~mask) | ((value << shift) & mask)
    data[first : last + 1] = chunk.to_bytes(width // 8, "big")


def field_result(op: FieldOp, old: int) -> tuple[int, bool]:
    """The value to store and whether it overflowed, under the op's OVERFLOW policy."""
    incrby = op.name == b"INCRBY"
    value, incr = (old, op.value) if incrby else (op.value, 0)
    if op.signed:
        direction, low, high = _signed_overflow(value, incr, op.bits)
        wrapped = (value + incr - low) % (1 << op.bits) + low
    else:
        value %= _U64  # SET takes the value as a uint64: a negative one is huge
        direction, low, high = _unsigned_overflow(value, incr, op.bits)
        wrapped = (value + incr) % (1 << op.bits)
    if not direction:
        return value + incr, False
    if op.overflow == SAT:
        return (high if direction > 0 else low), True
    return wrapped, True


def _signed_overflow(value: int, incr: int, bits: int) -> tuple[int, int, int]:
    """checkSignedBitfieldOverflow, with its 64-bit arithmetic: (1 over, -1 under, 0 fits,
    low, high). The limits wrap in C, so a SET of a very negative value counts as an
    overflow upwards (and saturates high), as Valkey does."""
    high = (1 << (bits - 1)) - 1
    low = -high - 1
    max_incr = _wrap_int64(high - value)
    min_incr = _wrap_int64(low - value)
    if value > high or (bits != 64 and incr > max_incr) or (value >= 0 and incr > max(max_incr, 0)):
        return 1, low, high
    if value < low or (bits != 64 and incr < min_incr) or (value < 0 and incr < min(min_incr, 0)):
        return -1, low, high
    return 0, low, high


def _unsigned_overflow(value: int, incr: int, bits: int) -> tuple[int, int, int]:
    """checkUnsignedBitfieldOverflow: (1 over, -1 under, 0 fits, low, high)."""
    high = (1 << bits) - 1
    if value > high or (incr > 0 and incr > high - value):
        return 1, 0, high
    if incr < 0 and incr < -value:
        return -1, 0, high
    return 0, 0, high


def bitfield_generic(c: Client, argv: list[bytes], readonly_command: bool) -> Any:
    ops = parse_field_ops(c, argv)
    key = argv[1]
    writes = [op for op in ops if op.name != b"GET"]
    if not writes:
        value = c.db.lookup_string(key)
        data = b"" if value is None else value
        return [read_field(data, op.offset, op.bits, op.signed) for op in ops]
    if readonly_command:
        raise ReplyError("ERR BITFIELD_RO only supports the GET subcommand")
    highest = max(op.offset + op.bits - 1 for op in writes)
    data, created, grew = bits_for_write(c, key, highest)
    replies: list[Any] = []
    changes = 0
    for op in ops:
        old = read_field(data, op.offset, op.bits, op.signed)
        if op.name == b"GET":
            replies.append(old)
            continue
        new, overflowed = field_result(op, old)
        if overflowed and op.overflow == FAIL:
            replies.append(None)
            continue
        replies.append(new if op.name == b"INCRBY" else old)
        write_field(data, op.offset, op.bits, new)
        if grew or old != new:
            changes += 1
    store_bits(c, key, data, created, changes > 0)
    return replies


def bitfield_key_flags(argv: list[bytes]) -> tuple[str, ...]:
    """BITFIELD only reads while its operations are whole GETs and OVERFLOWs (Valkey's
    bitfieldGetKeys: a SET, an INCRBY or anything it cannot parse writes)."""
    i = 2
    while i < len(argv):
        remaining = len(argv) - i - 1
        op = argv[i].lower()
        if op == b"get" and remaining >= 2:
            i += 3
        elif op == b"overflow" and remaining >= 1:
            i += 2
        else:
            return ("RW", "access", "update")
    return ("RO", "access")


@command("bitfield", -2, "write denyoom",
         keys=keys_range(1, flags="RW access update variable_flags", flags_for_call=bitfield_key_flags),
         acl="bitmap", group=G, since="3.2.0",
         complexity="O(1) for each subcommand specified",
         summary="Reads, writes and increments integers of any width at any bit offset of a "
         "string value.")
def bitfield(c: Client, argv: list[bytes]) -> Any:
    return bitfield_generic(c, argv, False)


@command("bitfield_ro", -2, "readonly fast", keys=keys_range(1, flags="RO access"), acl="bitmap",
         group=G, since="6.0.0", complexity="O(1) for each subcommand specified",
         summary="Reads integers of any width at any bit offset of a string value.")
def bitfield_ro(c: Client, argv: list[bytes]) -> Any:
    return bitfield_generic(c, argv, True)
