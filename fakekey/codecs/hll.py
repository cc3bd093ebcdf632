"""HyperLogLog strings, byte for byte as Valkey writes them (its src/hyperloglog.c layout).

A HyperLogLog is an ordinary string: a 16-byte header ("HYLL", the encoding byte, three
unused bytes, the cached cardinality as a little-endian uint64 whose top bit marks it
stale) followed by 16384 registers, either dense (6 bits each, packed from the low bit) or
sparse (run-length opcodes ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx).

Valkey edits the sparse form in place and only tidies up a few opcodes around each change,
so the bytes depend on the order of the additions: this module replays the same edits on
a list of opcodes (`Sparse`), which keeps each addition O(log n) in Python, and writes the
bytes back once per command. The dense form is edited in the bytearray itself. Whole-array
work (counting, merging, packing) goes through bytes.translate, slices and big integers,
so it runs at C speed.

Pure: imports nothing from the server.
"""

from __future__ import annotations

import math
import random
import re
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate

HEADER = 16
REGISTERS = 16384
DENSE_BYTES = REGISTERS * 6 // 8
DENSE_SIZE = HEADER + DENSE_BYTES
DENSE, SPARSE = 0, 1
MAGIC = b"HYLL"
SEED = 0xADC83B19
_Q = 50  # hash bits left once the register index is taken
_ALPHA_INF = 0.721347520444481703680  # 0.5 / ln(2)
_M64 = (1 << 64) - 1
_MURMUR_M = 0xC6A4A7935BD1E995
_VAL_MAX_VALUE, _VAL_MAX_LEN, _ZERO_MAX_LEN = 32, 4, 64

# Opcodes as ints: a one-byte opcode is its byte (ZERO < 0x40, VAL 0x80..0xff); an XZERO
# is its two bytes read big-endian (0x4000 | run length - 1), so it is the only one > 0xff.
_XZERO = 0x4000


_XZERO_BYTE = re.compile(b"[\x40-\x7f]")
_NONZERO = re.compile(b"[^\x00]")
_LOW = 0 if sys.byteorder == "little" else 1  # where the low byte of a uint16 lies
_SPANS = bytes((b & 0x3F) + 1 if b < 0x40 else (b & 3) + 1 for b in range(256))


class Corrupted(Exception):
    """The registers do not describe 16384 registers (Valkey's INVALIDOBJ)."""


# --- hashing ---------------------------------------------------------------------------------


def murmur64a(data: bytes, seed: int = SEED) -> int:
    """MurmurHash64A, endian-neutral, as Valkey's HyperLogLog hashes elements."""
    n = len(data)
    m = _MURMUR_M
    h = (seed ^ (n * m)) & _M64
    blocks = n >> 3
    if blocks:
        for k in struct.unpack_from(f"<{blocks}Q", data):
            k = (k * m) & _M64
            k ^= k >> 47
            h ^= (k * m) & _M64
            h = (h * m) & _M64
    if n & 7:
        h ^= int.from_bytes(data[blocks << 3:], "little")
        h = (h * m) & _M64
    h ^= h >> 47
    h = (h * m) & _M64
    return h ^ (h >> 47)


def pattern(element: bytes) -> tuple[int, int]:
    """(register index, run length of 0...1) of an element, as hllPatLen computes them."""
    h = murmur64a(element)
    rest = (h >> 14) | (1 << _Q)
    return h & (REGISTERS - 1), (rest & -rest).bit_length()


# --- the header ------------------------------------------------------------------------------


def new_sparse() -> bytearray:
    """An empty HyperLogLog as PFADD creates it: sparse, one XZERO of 16384 registers."""
    return bytearray(MAGIC + bytes((SPARSE, 0, 0, 0)) + bytes(8) + b"\x7f\xff")


def is_hll(value: bytes | bytearray) -> bool:
    """isHLLObjectOrReply: the magic, a known encoding, and a dense one of its exact size."""
    if len(value) < HEADER or value[:4] != MAGIC:
        return False
    encoding = value[4]
    return encoding == SPARSE or (encoding == DENSE and len(value) == DENSE_SIZE)


def invalidate(data: bytearray) -> None:
    data[15] |= 0x80


def cached_card(value: bytes | bytearray) -> int | None:
    """The cached cardinality, or None when marked stale."""
    if value[15] & 0x80:
        return None
    return int.from_bytes(value[8:16], "little")


def store_card(data: bytearray, card: int) -> None:
    data[8:16] = card.to_bytes(8, "little")


# --- the sparse form -----------------------------------------------------------------------


def _span(op: int) -> int:
    if op >= _XZERO:
        return (op & 0x3FFF) + 1
    if op & 0x80:
        return (op & 3) + 1
    return op + 1


def _zeros(n: int) -> int:
    return _XZERO | (n - 1) if n > _ZERO_MAX_LEN else n - 1


def _val(value: int, n: int) -> int:
    return 0x80 | (value - 1) << 2 | (n - 1)


def _oplen(op: int) -> int:
    return 2 if op >= _XZERO else 1


class Sparse:
    """The opcodes of a sparse HyperLogLog, with the first register each one covers.

    Only the opcodes that can matter are parsed: the ones up to register 16383 and a few
    after it (Valkey's tidying looks at most six opcodes past a change); whatever a
    corrupted value holds beyond them is kept as bytes (`tail`)."""

    __slots__ = ("ops", "starts", "tail", "size", "cut")

    def __init__(self, value: bytes | bytearray) -> None:
        self._parse(value)

    def _parse(self, value: bytes | bytearray) -> None:
        ops = array("H")
        starts = array("i")  # at most 16448 opcodes of at most 16384 registers each
        first = 0
        i = HEADER
        n = len(value)
        cut = 0
        room = _MAX_OPS
        # runs of one-byte opcodes are taken whole; only the XZEROs between are read apart
        while i < n and room:
            end = min(n, i + room)
            found = _XZERO_BYTE.search(value, i, end)
            j = found.start() if found else end
            if j > i:
                run = bytes(value[i:j])
                wide = bytearray(2 * len(run))
                wide[_LOW::2] = run
                ops.frombytes(wide)
                starts.extend(accumulate(run.translate(_SPANS), initial=first))
                first = starts.pop()
                room -= j - i
            i = j
            if found is None:
                continue
            # a last XZERO missing its second byte reads Valkey's sds terminator (0)
            cut = 0 if j + 1 < n else 1
            op = (value[j] << 8) | (value[j + 1] if j + 1 < n else 0)
            ops.append(op)
            starts.append(first)
            first += (op & 0x3FFF) + 1
            room -= 1
            i = j + 2
        self.ops = ops
        self.starts = starts
        self.tail = bytes(value[i:]) if i < n else b""
        self.size = n  # the string's length, header included
        self.cut = cut  # bytes the opcodes claim past the string's end (0 or 1)

    def body(self) -> bytes:
        # each opcode as two bytes, high first: one-byte opcodes have a zero high byte,
        # XZEROs (few) a non-zero one, put back in front of their low byte
        pairs = self.ops.tobytes()
        high, low = pairs[1 - _LOW::2], pairs[_LOW::2]
        parts = []
        done = 0
        for found in _NONZERO.finditer(high):
            at = found.start()
            parts.append(low[done:at])
            parts.append(high[at:at + 1])
            done = at
        parts.append(low[done:])
        parts.append(self.tail)
        out = b"".join(parts)
        return out[:len(out) - self.cut] if self.cut else out

    def set(self, index: int, count: int, max_bytes: int) -> int | None:
        """hllSparseSet: 1 if the register grew, 0 if not, -1 for corrupted opcodes, None
        when Valkey promotes to dense instead (the caller converts and sets densely)."""
        if count > _VAL_MAX_VALUE:
            return None
        ops, starts = self.ops, self.starts
        k = bisect_right(starts, index) - 1
        if k < 0:
            return -1
        op, first = ops[k], starts[k]
        span = _span(op)
        if index >= first + span:
            return -1
        if op & 0x80 and op < _XZERO:  # VAL
            value = (op >> 2 & 0x1F) + 1
            if value >= count:
                return 0
            if span == 1:
                ops[k] = _val(count, 1)
                self._tidy(k)
                return 1
            seq = []
            if index != first:
                seq.append(_val(value, index - first))
            seq.append(_val(count, 1))
            if index != first + span - 1:
                seq.append(_val(value, first + span - 1 - index))
        elif op < 0x40 and span == 1:  # ZERO of one register
            ops[k] = _val(count, 1)
            self._tidy(k)
            return 1
        else:
            seq = []
            if index != first:
                seq.append(_zeros(index - first))
            seq.append(_val(count, 1))
            if index != first + span - 1:
                seq.append(_zeros(first + span - 1 - index))
        delta = sum(map(_oplen, seq)) - _oplen(op)
        if delta > 0 and self.size + delta > max_bytes:
            return None
        seq_starts = array("i", (first,))
        for s in seq[:-1]:
            seq_starts.append(seq_starts[-1] + _span(s))
        ops[k:k + 1] = array("H", seq)
        starts[k:k + 1] = seq_starts
        self.size += delta
        if self.cut:
            # a truncated last XZERO was split: Valkey's string ends where its length
            # says, cutting the new opcodes; what follows reads the bytes as they are
            self._parse(bytes(HEADER) + self.body())
        self._tidy(k)
        return 1

    def _tidy(self, k: int) -> None:
        """Step 4 of hllSparseSet: from the opcode before the change, five opcodes are
        looked at, and two neighbouring VALs of one value merge when the run fits."""
        ops, starts = self.ops, self.starts
        i = k - 1 if k > 0 else 0
        n = len(ops)
        scan = 5
        while i < n and scan:
            scan -= 1
            op = ops[i]
            if not op & 0x80 or op >= _XZERO:
                i += 1
                continue
            if i + 1 < n:
                nxt = ops[i + 1]
                if nxt & 0x80 and nxt < _XZERO and (nxt ^ op) & 0x7C == 0:
                    run = (op & 3) + (nxt & 3) + 2
                    if run <= _VAL_MAX_LEN:
                        ops[i] = (op & 0xFC) | (run - 1)
                        del ops[i + 1]
                        del starts[i + 1]
                        n -= 1
                        self.size -= 1
                        continue
            i += 1

    def raw(self) -> bytearray:
        """One byte per register; Corrupted unless the opcodes cover exactly 16384."""
        raw = bytearray(REGISTERS)
        idx = 0
        for op in self.ops:
            span = _span(op)
            if idx + span > REGISTERS:
                raise Corrupted
            if op & 0x80 and op < _XZERO:
                raw[idx:idx + span] = bytes(((op >> 2 & 0x1F) + 1,)) * span
            idx += span
        if idx != REGISTERS:
            raise Corrupted
        return raw

    def histogram(self) -> list[int]:
        histo = [0] * 64
        idx = 0
        for op in self.ops:
            span = _span(op)
            if idx + span > REGISTERS:
                raise Corrupted
            idx += span
            if op & 0x80 and op < _XZERO:
                histo[(op >> 2 & 0x1F) + 1] += span
            else:
                histo[0] += span
        if idx != REGISTERS:
            raise Corrupted
        return histo


# The opcodes of recently edited sparse values, by their register bytes, so a run of small
# PFADDs does not parse the same bytes again each time. A valid sparse value is at most
# 32 KB (16384 opcodes of 2 bytes); longer ones are corrupted and never kept.
_PARSED: dict[bytes, Sparse] = {}
_PARSED_MAX = 16
_PARSED_SIZE = HEADER + 2 * REGISTERS
_MAX_OPS = REGISTERS + 64  # past the opcode of register 16383, enough for the tidying


def _sparse_of(data: bytes | bytearray, to_edit: bool = False) -> Sparse:
    """The opcodes of a sparse value; one `to_edit` leaves the cache (it is about to
    change: `_write_sparse` puts it back under its new bytes)."""
    if len(data) > _PARSED_SIZE:
        return Sparse(data)
    body = bytes(data[HEADER:])
    sparse = _PARSED.pop(body, None) if to_edit else _PARSED.get(body)
    return sparse if sparse is not None else Sparse(data)


def _remember(body: bytes, sparse: Sparse) -> None:
    if sparse.tail or sparse.cut or HEADER + len(body) > _PARSED_SIZE:
        return
    if len(_PARSED) >= _PARSED_MAX:
        del _PARSED[next(iter(_PARSED))]
    _PARSED[body] = sparse


# --- dense registers -------------------------------------------------------------------------


def _table(fn: Callable[[int], int]) -> bytes:
    """A bytes.translate table applying `fn` to every byte."""
    return bytes(fn(b) & 0xFF for b in range(256))


_AND63 = _table(lambda b: b & 63)
_SHR2 = _table(lambda b: b >> 2)
_SHR4 = _table(lambda b: b >> 4)
_SHR6 = _table(lambda b: b >> 6)
_LOW4_SHL2 = _table(lambda b: (b & 15) << 2)
_LOW2_SHL4 = _table(lambda b: (b & 3) << 4)
_LOW2_SHL6 = _table(lambda b: (b & 3) << 6)
_LOW4_SHL4 = _table(lambda b: (b & 15) << 4)
_SHL2 = _table(lambda b: b << 2)


def _or(a: bytes | bytearray, b: bytes | bytearray) -> bytes:
    """Byte-wise OR of two equal-length strings."""
    return (int.from_bytes(a, "little") | int.from_bytes(b, "little")).to_bytes(len(a), "little")


def dense_to_raw(registers: bytes | bytearray) -> bytearray:
    """12288 packed bytes -> 16384 registers of one byte each."""
    b0, b1, b2 = registers[0::3], registers[1::3], registers[2::3]
    raw = bytearray(REGISTERS)
    raw[0::4] = b0.translate(_AND63)
    raw[1::4] = _or(b0.translate(_SHR6), b1.translate(_LOW4_SHL2))
    raw[2::4] = _or(b1.translate(_SHR4), b2.translate(_LOW2_SHL4))
    raw[3::4] = b2.translate(_SHR2)
    return raw


def raw_to_dense(raw: bytes | bytearray) -> bytearray:
    """16384 registers (each < 64) -> 12288 packed bytes."""
    r0, r1, r2, r3 = raw[0::4], raw[1::4], raw[2::4], raw[3::4]
    dense = bytearray(DENSE_BYTES)
    dense[0::3] = _or(r0, r1.translate(_LOW2_SHL6))
    dense[1::3] = _or(r1.translate(_SHR2), r2.translate(_LOW4_SHL4))
    dense[2::3] = _or(r2.translate(_SHR4), r3.translate(_SHL2))
    return dense


_HIGH = int.from_bytes(b"\x80" * REGISTERS, "little")


def raw_max(a: bytes | bytearray, b: bytes | bytearray) -> bytearray:
    """Register-wise maximum of two raw arrays (values below 128), with one subtraction
    over the whole array: each byte's top bit says whether a >= b there."""
    x, y = int.from_bytes(a, "little"), int.from_bytes(b, "little")
    keep_x = ((((x | _HIGH) - y) & _HIGH) >> 7) * 0xFF
    return bytearray((y ^ ((x ^ y) & keep_x)).to_bytes(REGISTERS, "little"))


def registers(value: bytes | bytearray) -> bytearray:
    """The 16384 registers of a HyperLogLog (checked by `is_hll`), one byte each."""
    if value[4] == DENSE:
        return dense_to_raw(value[HEADER:])
    return _sparse_of(value).raw()


def to_dense(data: bytearray) -> bool:
    """hllSparseToDense in place: False if already dense; Corrupted if the opcodes are.
    The header is kept (cached cardinality included), the encoding byte set to dense."""
    if data[4] == DENSE:
        return False
    raw = _sparse_of(data).raw()
    data[HEADER:] = raw_to_dense(raw)
    data[4] = DENSE
    return True


# --- adding ----------------------------------------------------------------------------------


def _dense_add(data: bytearray, elements: list[bytes], start: int) -> int:
    """PFADD's dense loop from elements[start]: how many registers grew."""
    updated = 0
    for i in range(start, len(elements)):
        index, count = pattern(elements[i])
        bit = index * 6
        at = HEADER + (bit >> 3)
        fb = bit & 7
        if fb <= 2:
            old = (data[at] >> fb) & 63
            if count > old:
                data[at] = (data[at] & ~(63 << fb)) | (count << fb)
                updated += 1
        else:
            old = ((data[at] >> fb) | (data[at + 1] << (8 - fb))) & 63
            if count > old:
                data[at] = (data[at] & ~(63 << fb) & 0xFF) | ((count << fb) & 0xFF)
                data[at + 1] = (data[at + 1] & ~(63 >> (8 - fb))) | (count >> (8 - fb))
                updated += 1
    return updated


def _dense_set(data: bytearray, index: int, count: int) -> None:
    bit = index * 6
    at = HEADER + (bit >> 3)
    fb = bit & 7
    data[at] = (data[at] & ~(63 << fb) & 0xFF) | ((count << fb) & 0xFF)
    if fb > 2:
        data[at + 1] = (data[at + 1] & ~(63 >> (8 - fb))) | (count >> (8 - fb))


def add(data: bytearray, elements: list[bytes], max_bytes: int) -> int:
    """PFADD's loop over `data` (an HLL checked by `is_hll`): how many additions changed a
    register. Raises Corrupted (after keeping the changes made before, as Valkey does)."""
    if data[4] == DENSE:
        updated = _dense_add(data, elements, 0)
        if updated:
            invalidate(data)
        return updated
    sparse = _sparse_of(data, to_edit=True)
    updated = 0
    for i, element in enumerate(elements):
        index, count = pattern(element)
        result = sparse.set(index, count, max_bytes)
        if result is None:  # promotion: the rest goes to the dense registers
            _write_sparse(data, sparse)
            if not to_dense(data):
                raise AssertionError("promoting a dense HLL")
            _dense_set(data, index, count)
            updated += 1 + _dense_add(data, elements, i + 1)
            invalidate(data)
            return updated
        if result < 0:
            _write_sparse(data, sparse)
            raise Corrupted
        if result:
            updated += 1
            data[15] |= 0x80
    _write_sparse(data, sparse)
    return updated


def _write_sparse(data: bytearray, sparse: Sparse) -> None:
    body = sparse.body()
    if len(data) != HEADER + len(body) or data[HEADER:] != body:
        data[HEADER:] = body
    _remember(body, sparse)


def merge_into(data: bytearray, raw: bytes | bytearray, use_dense: bool, max_bytes: int) -> None:
    """PFMERGE's write of the merged registers into the destination `data` (valid: it was
    one of the sources). Corrupted only from a corrupted sparse destination turned dense."""
    if not use_dense:
        # register by register, as Valkey does, while the opcodes stay within bounds
        sparse = _sparse_of(data, to_edit=True)
        promoted = False
        for found in _NONZERO.finditer(raw):
            index = found.start()
            if sparse.set(index, raw[index], max_bytes) is None:
                promoted = True
                break
        _write_sparse(data, sparse)
        use_dense = promoted
    if use_dense:
        # every source, the destination included, is below the merged registers: once
        # dense, the destination holds exactly them
        to_dense(data)
        data[HEADER:] = raw_to_dense(raw)
    invalidate(data)


# --- counting --------------------------------------------------------------------------------


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        z_prime = z
        z += x * y
        y += y
        if z_prime == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        z_prime = z
        y *= 0.5
        z -= (1 - x) ** 2 * y
        if z_prime == z:
            return z / 3


def estimate(histo: list[int]) -> int:
    """Ertl's improved estimator over the register histogram, as Valkey's hllCount; the
    result as the uint64 Valkey stores (llroundl of an infinite estimate gives 2**63)."""
    m = float(REGISTERS)
    z = m * _tau((m - histo[_Q + 1]) / m)
    for j in range(_Q, 0, -1):
        z += histo[j]
        z *= 0.5
    z += m * _sigma(histo[0] / m)
    e = math.inf if z == 0 else _ALPHA_INF * m * m / z
    if not math.isfinite(e) or e >= 2.0**63:
        return 1 << 63
    whole = math.floor(e)
    return whole + 1 if e - whole >= 0.5 else whole


def raw_histogram(raw: bytes | bytearray) -> list[int]:
    return [raw.count(v) for v in range(64)]


def count(value: bytes | bytearray) -> int:
    """hllCount of one HyperLogLog (checked by `is_hll`); Corrupted for bad opcodes."""
    if value[4] == DENSE:
        return estimate(raw_histogram(dense_to_raw(value[HEADER:])))
    return estimate(_sparse_of(value).histogram())


# PFDEBUG DECODE: every opcode (an XZERO cut short by the string's end reads a 0 after it)
_OPCODE = re.compile(b"[\x40-\x7f][\x00-\xff]?|[\x00-\x3f\x80-\xff]")
_WORDS = {bytes((b,)): b"z:%d" % (b + 1) if b < 0x40 else b"v:%d,%d" % ((b >> 2 & 0x1F) + 1, (b & 3) + 1)
          for b in range(256) if not 0x40 <= b < 0x80}
_WORDS.update((bytes((0x40 | hi, lo)), b"Z:%d" % ((hi << 8 | lo) + 1)) for hi in range(64) for lo in range(256))
_WORDS.update((bytes((0x40 | hi,)), b"Z:%d" % ((hi << 8) + 1)) for hi in range(64))


def decode(value: bytes | bytearray) -> bytes:
    """PFDEBUG DECODE's listing of the sparse opcodes, all of them."""
    return b" ".join(map(_WORDS.__getitem__, _OPCODE.findall(value, HEADER)))


# --- PFSELFTEST ------------------------------------------------------------------------------


def new_dense() -> bytearray:
    return bytearray(MAGIC + bytes((DENSE, 0, 0, 0)) + bytes(8 + DENSE_BYTES))


def self_test(rng: random.Random, max_bytes: int, cycles: int = 1, largest: int = 100_000) -> str | None:
    """PFSELFTEST's two checks, scaled down to pure-Python speed (Valkey runs 1000
    register cycles and 10 million elements): None on success, else the failure text."""
    dense = new_dense()
    for _ in range(cycles):
        values = bytes(rng.getrandbits(6) for _ in range(REGISTERS))
        for i, value in enumerate(values):
            _dense_set(dense, i, value)
        got = dense_to_raw(dense[HEADER:])
        if got != values:
            i = next(i for i in range(REGISTERS) if got[i] != values[i])
            return f"Register {i} should be {values[i]} but is {got[i]}"
    dense = new_dense()
    sparse = new_sparse()
    relerr = 1.04 / math.sqrt(REGISTERS)
    seed = rng.getrandbits(64)
    checkpoint = done = 1
    elements = [((j ^ seed) & _M64).to_bytes(8, "little") for j in range(1, largest + 1)]
    while checkpoint <= largest:
        batch = elements[done - 1:checkpoint]
        _dense_add(dense, batch, 0)
        add(sparse, batch, max_bytes)
        done = checkpoint + 1
        if checkpoint < max_bytes / 2 and sparse[4] != SPARSE:
            return "sparse encoding not used"
        card = count(dense)
        if card != count(sparse):
            return "dense/sparse disagree"
        maxerr = 1 if checkpoint == 10 else math.ceil(relerr * 6 * checkpoint)
        if abs(checkpoint - card) > maxerr:
            return f"Too big error. card:{checkpoint} abserr:{abs(checkpoint - card)}"
        checkpoint *= 10
    return None
