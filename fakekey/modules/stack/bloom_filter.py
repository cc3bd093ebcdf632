"""RedisBloom's scalable Bloom filter (TYPE `MBbloom--`): a chain of Bloom filters, each
new one `growth` times the capacity of the last at half its error rate, built, hashed
and dumped as RedisBloom 2.8 does it, so BF.INFO's figures, BF.SCANDUMP's chunks and the
answers of BF.EXISTS are RedisBloom's.

Each filter holds `bits` bits (entries x bits-per-entry, rounded up to whole 64-bit
words) and sets `hashes` of them per item, at (a + i*b) mod bits for the two
MurmurHash64A values a and b of the item. BF.SCANDUMP's first chunk is the chain's
header (its counters and each filter's parameters, packed little endian as RedisBloom's
dumpedChainHeader); the next ones are the filters' bit arrays in order, the iterator the
offset in them plus one."""

from __future__ import annotations

import math
import struct
from typing import ClassVar, Final

from fakekey.modules.stack import BLOOM_MODULE
from fakekey.modules.stack.module_io import ModuleReader, ModuleWriter
from fakekey.modules.stack.murmur import murmur64a
from fakekey.types.module_value import ModuleValue, register_module_type

U64: Final = (1 << 64) - 1
U32: Final = (1 << 32) - 1
LN2: Final = 0.693147180559945  # RedisBloom's constants, to the digit: they decide the sizes
LN2_SQUARED: Final = 0.480453013918201
TIGHTENING: Final = 0.5  # each new filter's error rate, of the last one's
HASH_SEED: Final = 0xC6A4A7935BD1E995

OPT_NOROUND: Final = 1
OPT_ENTS_IS_BITS: Final = 2
OPT_FORCE64: Final = 4
OPT_NO_SCALING: Final = 8
KNOWN_OPTIONS: Final = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING

ADDED, PRESENT, FULL = 1, 0, -2  # what `add` answers
CHAIN_BYTES: Final = 32  # sizeof(SBChain) and sizeof(SBLink): BF.INFO's Size counts them
LINK_BYTES: Final = 64
MAX_CHUNK: Final = 16 * 1024 * 1024  # the most bytes one BF.SCANDUMP chunk carries
MAX_FILTER_BYTES: Final = 1 << 32  # a loaded header asking for more is refused
MAX_HASHES: Final = 1075  # RedisBloom's BLOOM_MAX_HASHES: what the least error rate gives

HEADER = struct.Struct("<QIII")  # size, nfilters, options, growth
LINK = struct.Struct("<QQQddIQB")  # bytes, bits, size, error, bpe, hashes, entries, n2

BAD_DATA: Final = "ERR received bad data"


def bits_per_entry(error: float) -> float:
    return abs(-(math.log(error) / LN2_SQUARED))


def item_hash(item: bytes) -> tuple[int, int]:
    a = murmur64a(item, HASH_SEED)
    return a, murmur64a(item, a)


class BloomLink:
    """One Bloom filter of the chain, and how many items it took."""

    __slots__ = ("bf", "bits", "bpe", "entries", "error", "force64", "hashes", "n2", "size")

    def __init__(self, entries: int, error: float, bpe: float, hashes: int, bits: int, n2: int,
                 size: int, force64: bool) -> None:
        self.entries = entries
        self.error = error
        self.bpe = bpe
        self.hashes = hashes
        self.bits = bits
        self.n2 = n2
        self.size = size
        self.force64 = force64
        self.bf = bytearray(bits // 8)

    @classmethod
    def new(cls, entries: int, error: float, options: int) -> BloomLink | None:
        """bloom_init without rounding to a power of two (RedisBloom always asks so)."""
        if entries < 1 or not 0 < error < 1:
            return None
        bpe = bits_per_entry(error)
        bits = max(int(entries * bpe), 1)
        whole_bytes = (bits // 64 + 1) * 8 if bits % 64 else bits // 8
        if whole_bytes > MAX_FILTER_BYTES:
            return None  # (RedisBloom's allocation would fail: ERR could not create filter)
        return cls(entries, error, bpe, math.ceil(LN2 * bpe), whole_bytes * 8, 0, 0,
                   bool(options & OPT_FORCE64))

    @property
    def nbytes(self) -> int:
        return len(self.bf)

    def _positions(self, a: int, b: int) -> list[int]:
        if self.n2:
            mod = 1 << self.n2
            mask = U64 if self.force64 or self.n2 > 31 else U32
        else:
            mod, mask = self.bits, U64
        if mask == U32:
            a, b = a & U32, b & U32
        return [((a + i * b) & mask) % mod for i in range(self.hashes)]

    def check(self, a: int, b: int) -> bool:
        bf = self.bf
        return all(bf[x >> 3] & (1 << (x & 7)) for x in self._positions(a, b))

    def add(self, a: int, b: int) -> bool:
        """Set the item's bits; whether any was unset (a new item)."""
        bf = self.bf
        fresh = False
        for x in self._positions(a, b):
            mask = 1 << (x & 7)
            if not bf[x >> 3] & mask:
                bf[x >> 3] |= mask
                fresh = True
        return fresh

    def valid(self) -> bool:
        """bloom_validate_integrity, and a size this process can hold."""
        return (0 < self.error < 1 and self.n2 <= 63 and self.bits != 0
                and not (self.n2 and self.bits < 1 << self.n2)
                and self.hashes == math.ceil(LN2 * self.bpe) and self.hashes <= MAX_HASHES
                and self.bits % 8 == 0
                and self.bits // 8 <= MAX_FILTER_BYTES)

    def copy(self) -> BloomLink:
        twin = BloomLink(self.entries, self.error, self.bpe, self.hashes, self.bits, self.n2,
                         self.size, self.force64)
        twin.bf[:] = self.bf
        return twin


@register_module_type
class ScalableBloom(ModuleValue):
    """A RedisBloom SBChain: the links, the items they took, options and growth."""

    TYPE_NAME: ClassVar[str] = "MBbloom--"
    ENCODING_VERSION: ClassVar[int] = 4
    MODULE_NAME: ClassVar[str] = BLOOM_MODULE
    MODULE_IO: ClassVar[bool] = True  # the payload is RedisBloom's own rdb_save

    __slots__ = ("growth", "links", "options", "size")

    def __init__(self, options: int, growth: int) -> None:
        self.links: list[BloomLink] = []
        self.size = 0
        self.options = options
        self.growth = growth

    @classmethod
    def create(cls, capacity: int, error: float, growth: int, nonscaling: bool) -> ScalableBloom | None:
        options = OPT_FORCE64 | OPT_NOROUND | (OPT_NO_SCALING if nonscaling else 0)
        chain = cls(options, growth)
        first = BloomLink.new(capacity, error * (1 if nonscaling else TIGHTENING), options)
        if first is None:
            return None
        chain.links.append(first)
        return chain

    # --- items ---------------------------------------------------------------------------

    def add(self, item: bytes) -> int:
        """ADDED, PRESENT (maybe a false positive), FULL (a non-scaling filter at its
        capacity), or -1 when a new link cannot be made."""
        a, b = item_hash(item)
        if any(link.check(a, b) for link in reversed(self.links)):
            return PRESENT
        current = self.links[-1]
        if current.size >= current.entries:
            if self.options & OPT_NO_SCALING:
                return FULL
            link = BloomLink.new(current.entries * self.growth, current.error * TIGHTENING, self.options)
            if link is None:
                return -1
            self.links.append(link)
            current = link
        if not current.add(a, b):
            return PRESENT
        current.size += 1
        self.size += 1
        return ADDED

    def check(self, item: bytes) -> bool:
        a, b = item_hash(item)
        return any(link.check(a, b) for link in reversed(self.links))

    # --- figures -------------------------------------------------------------------------

    @property
    def scaling(self) -> bool:
        return not self.options & OPT_NO_SCALING

    def capacity(self) -> int:
        return sum(link.entries for link in self.links)

    def memory_usage(self) -> int:
        return CHAIN_BYTES + sum(LINK_BYTES + link.nbytes for link in self.links)

    # --- BF.SCANDUMP and BF.LOADCHUNK --------------------------------------------------------

    def header(self) -> bytes:
        parts = [HEADER.pack(self.size, len(self.links), self.options, self.growth)]
        parts += [LINK.pack(link.nbytes, link.bits, link.size, link.error, link.bpe, link.hashes,
                            link.entries, link.n2) for link in self.links]
        return b"".join(parts)

    def _link_at(self, position: int) -> tuple[BloomLink, int] | None:
        """The link holding byte `position - 1` of the concatenated bit arrays, and the
        offset in it (getLinkPos)."""
        if position < 1:
            return None
        offset = position - 1
        for link in self.links:
            if offset < link.nbytes:
                return link, offset
            offset -= link.nbytes
        return None

    def chunk(self, position: int) -> tuple[int, bytes]:
        """The bytes from iterator `position` on, and the next iterator (0 at the end)."""
        found = self._link_at(position)
        if found is None:
            return 0, b""
        link, offset = found
        data = bytes(link.bf[offset:offset + MAX_CHUNK])
        return position + len(data), data

    @classmethod
    def from_header(cls, buf: bytes) -> ScalableBloom:
        """SB_NewChainFromHeader: an empty chain shaped as the header says; ValueError
        with RedisBloom's message when it is not one."""
        if len(buf) < HEADER.size:
            raise ValueError(BAD_DATA)
        size, count, options, growth = HEADER.unpack_from(buf)
        if count == 0 or len(buf) != HEADER.size + LINK.size * count:
            raise ValueError(BAD_DATA)
        chain = cls(options, growth)
        chain.size = size
        for i in range(count):
            nbytes, bits, taken, error, bpe, hashes, entries, n2 = LINK.unpack_from(
                buf, HEADER.size + i * LINK.size)
            link = BloomLink(entries, error, bpe, hashes, bits, n2, taken, bool(options & OPT_FORCE64))
            if bits != nbytes * 8 or not link.valid():
                raise ValueError(BAD_DATA)
            chain.links.append(link)
        if options & ~KNOWN_OPTIONS or sum(link.size for link in chain.links) != size:
            raise ValueError(BAD_DATA)
        return chain

    def load_chunk(self, position: int, buf: bytes) -> None:
        """SBChain_LoadEncodedChunk: `buf` is what BF.SCANDUMP answered with `position`."""
        if position <= 0 or position < len(buf):
            raise ValueError(BAD_DATA)
        found = self._link_at(position - len(buf))
        if found is None:
            raise ValueError("ERR invalid offset - no link found")
        link, offset = found
        if len(buf) > link.nbytes - offset:
            raise ValueError("ERR invalid chunk - Too big for current filter")
        link.bf[offset:offset + len(buf)] = buf

    def rewrite_commands(self, key: bytes) -> list[list[bytes]]:
        """BFAofRewrite: BF.LOADCHUNK of the header, then of each chunk."""
        commands = [[b"BF.LOADCHUNK", key, b"1", self.header()]]
        position = 1
        while True:
            position, data = self.chunk(position)
            if not position:
                return commands
            commands.append([b"BF.LOADCHUNK", key, b"%d" % position, data])

    # --- the module type -----------------------------------------------------------------------

    def payload(self) -> bytes:
        """BFRdbSave's fields, as RedisModule_Save* writes them."""
        out = ModuleWriter()
        for number in (self.size, len(self.links), self.options, self.growth):
            out.unsigned(number)
        for link in self.links:
            out.unsigned(link.entries)
            out.double(link.error)
            out.unsigned(link.hashes)
            out.double(link.bpe)
            out.unsigned(link.bits)
            out.unsigned(link.n2)
            out.buffer(bytes(link.bf))
            out.unsigned(link.size)
        return out.payload()

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> ScalableBloom:
        """BFRdbLoad, every encoding version up to 4 (before 2 no options, before 4 no
        growth: 2; at 0 no bit count); checked as a loaded SCANDUMP header is."""
        if encoding_version > cls.ENCODING_VERSION:
            raise ValueError("a newer bloom filter encoding")
        fields = ModuleReader(data)
        size, count = fields.unsigned(), fields.unsigned()
        options = fields.unsigned() if encoding_version >= 2 else 0
        growth = fields.unsigned() if encoding_version >= 4 else 2
        if not 0 < count < 1000 or options & ~KNOWN_OPTIONS:
            raise ValueError("not a bloom filter")
        chain = cls(options, growth)
        chain.size = size
        for _ in range(count):
            entries, error, hashes, bpe = (fields.unsigned(), fields.double(), fields.unsigned(),
                                           fields.double())
            if encoding_version == 0:
                bits, n2 = int(entries * bpe), 0
            else:
                bits, n2 = fields.unsigned(), fields.unsigned()
            bf = fields.buffer()
            link = BloomLink(entries, error, bpe, hashes, len(bf) * 8, n2, fields.unsigned(),
                             bool(options & OPT_FORCE64))
            if encoding_version and bits != len(bf) * 8 or not link.valid():
                raise ValueError("not a bloom filter")
            link.bf[:] = bf
            chain.links.append(link)
        fields.finish()
        if sum(link.size for link in chain.links) != size:
            raise ValueError("not a bloom filter")
        return chain

    def copy(self) -> ScalableBloom:
        twin = ScalableBloom(self.options, self.growth)
        twin.size = self.size
        twin.links = [link.copy() for link in self.links]
        return twin
