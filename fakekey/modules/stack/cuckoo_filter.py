"""RedisBloom's Cuckoo filter (TYPE `MBbloomCF`): sub-filters of buckets of one-byte
fingerprints, each new sub-filter `expansion` times the buckets of the last, filled,
kicked and compacted as RedisBloom 2.8 does it, so CF.INFO's figures, CF.SCANDUMP's
chunks and CF.COUNT's answers are RedisBloom's.

An item's MurmurHash64A h gives its fingerprint (h mod 255, plus one: 0 is an empty
slot) and its two buckets: h, and h xor fingerprint x 0x5bd1e995, each modulo the
sub-filter's bucket count. CF.SCANDUMP's first chunk is the header (RedisBloom's packed
CFHeader); the next ones are the sub-filters' buckets in order, the iterator the offset
in them plus one."""

from __future__ import annotations

import struct
from typing import ClassVar, Final

from fakekey.modules.stack import BLOOM_MODULE
from fakekey.modules.stack.module_io import ModuleReader, ModuleWriter
from fakekey.modules.stack.murmur import murmur64a
from fakekey.types.module_value import ModuleValue, register_module_type

U64: Final = (1 << 64) - 1
ALT_MULTIPLIER: Final = 0x5BD1E995
INSERTED, EXISTS, NO_SPACE, NO_MEMORY = 1, 0, -1, -2
FILTER_BYTES: Final = 40  # sizeof(CuckooFilter) and sizeof(SubCF): CF.INFO's Size counts them
SUB_BYTES: Final = 16
MAX_CHUNK: Final = 16 * 1024 * 1024
MAX_BYTES: Final = 1 << 32  # a loaded header asking for more is refused
HEADER = struct.Struct("<QQQQHHH")  # items, buckets, deletes, filters, bucket size, iterations, expansion


def next_power_of_two(n: int) -> int:
    """getNextN2, 0 staying 0 as its unsigned arithmetic leaves it."""
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


def alt_index(fp: int, index: int) -> int:
    return (index ^ (fp * ALT_MULTIPLIER)) & U64


def lookup(item: bytes) -> tuple[int, int, int]:
    """(fingerprint, first hash, second hash) of an item."""
    h = murmur64a(item, 0)
    fp = h % 255 + 1
    return fp, h, alt_index(fp, h)


@register_module_type
class CuckooFilter(ModuleValue):
    """A RedisBloom CuckooFilter: its counters, settings and sub-filters (bytearrays of
    buckets x bucket_size fingerprints)."""

    TYPE_NAME: ClassVar[str] = "MBbloomCF"
    ENCODING_VERSION: ClassVar[int] = 4
    MODULE_NAME: ClassVar[str] = BLOOM_MODULE
    MODULE_IO: ClassVar[bool] = True  # the payload is RedisBloom's own rdb_save

    __slots__ = ("bucket_size", "expansion", "filters", "max_iterations", "num_buckets",
                 "num_deletes", "num_items")

    def __init__(self, num_buckets: int, bucket_size: int, max_iterations: int, expansion: int) -> None:
        self.num_buckets = num_buckets
        self.bucket_size = bucket_size
        self.max_iterations = max_iterations
        self.expansion = expansion
        self.num_items = 0
        self.num_deletes = 0
        self.filters: list[bytearray] = []

    @classmethod
    def create(cls, capacity: int, bucket_size: int, max_iterations: int,
               expansion: int) -> CuckooFilter | None:
        """A filter of `capacity` items at least; None past what this process can hold
        (RedisBloom's allocation would fail)."""
        buckets = max(next_power_of_two(capacity // bucket_size), 1)
        if buckets * bucket_size > MAX_BYTES:
            return None
        cf = cls(buckets, bucket_size, max_iterations, next_power_of_two(expansion))
        cf.grow()
        return cf

    def grow(self) -> bool:
        """Add the next sub-filter; False when it would pass what this process can hold
        (where RedisBloom's allocation fails)."""
        size = self.num_buckets * self.expansion ** len(self.filters) * self.bucket_size
        if size + sum(len(data) for data in self.filters) > MAX_BYTES:
            return False
        self.filters.append(bytearray(size))
        return True

    def _buckets_of(self, data: bytearray) -> int:
        return len(data) // self.bucket_size

    def _slots(self, data: bytearray, h: int) -> range:
        start = h % self._buckets_of(data) * self.bucket_size
        return range(start, start + self.bucket_size)

    # --- items ---------------------------------------------------------------------------

    def check(self, item: bytes) -> bool:
        fp, h1, h2 = lookup(item)
        return self._has(fp, h1, h2)

    def _has(self, fp: int, h1: int, h2: int) -> bool:
        for data in self.filters:
            if any(data[i] == fp for i in self._slots(data, h1)) or any(
                    data[i] == fp for i in self._slots(data, h2)):
                return True
        return False

    def count(self, item: bytes) -> int:
        fp, h1, h2 = lookup(item)
        total = 0
        for data in self.filters:
            total += sum(data[i] == fp for i in self._slots(data, h1))
            total += sum(data[i] == fp for i in self._slots(data, h2))
        return total

    def insert(self, item: bytes, unique: bool) -> int:
        """INSERTED, EXISTS (CF.ADDNX of a present item), NO_SPACE, or NO_MEMORY (a new
        sub-filter too big)."""
        fp, h1, h2 = lookup(item)
        if unique and self._has(fp, h1, h2):
            return EXISTS
        while True:
            for data in reversed(self.filters):
                slot = self._free_slot(data, h1, h2)
                if slot is not None:
                    data[slot] = fp
                    self.num_items += 1
                    return INSERTED
            if self._kick_in(self.filters[-1], fp, h1):
                self.num_items += 1
                return INSERTED
            if self.expansion == 0:
                return NO_SPACE
            if not self.grow():
                return NO_MEMORY

    def _free_slot(self, data: bytearray, h1: int, h2: int) -> int | None:
        for h in (h1, h2):
            for i in self._slots(data, h):
                if not data[i]:
                    return i
        return None

    def _kick_in(self, data: bytearray, fp: int, h1: int) -> bool:
        """Filter_KOInsert: evict fingerprints along their alternate buckets for up to
        max_iterations steps; on failure undo the moves, the item left out."""
        size = self.bucket_size
        buckets = self._buckets_of(data)
        victim = 0
        index = h1 % buckets
        for _ in range(self.max_iterations):
            at = index * size + victim
            data[at], fp = fp, data[at]
            index = alt_index(fp, index) % buckets
            start = index * size
            for i in range(start, start + size):
                if not data[i]:
                    data[i] = fp
                    return True
            victim = (victim + 1) % size
        for _ in range(self.max_iterations):
            victim = (victim + size - 1) % size
            index = alt_index(fp, index) % buckets
            at = index * size + victim
            data[at], fp = fp, data[at]
        return False

    def delete(self, item: bytes) -> bool:
        fp, h1, h2 = lookup(item)
        for data in reversed(self.filters):
            for h in (h1, h2):
                for i in self._slots(data, h):
                    if data[i] == fp:
                        data[i] = 0
                        self.num_items -= 1
                        self.num_deletes += 1
                        if len(self.filters) > 1 and self.num_deletes > self.num_items * 0.10:
                            self.compact(keep_going=False)
                        return True
        return False

    def compact(self, keep_going: bool) -> None:
        """Move fingerprints of the later sub-filters into earlier ones; a last one left
        empty is dropped. Without `keep_going`, stop at the first that cannot be emptied."""
        for index in range(len(self.filters) - 1, 0, -1):
            if not self._compact_one(index) and not keep_going:
                break
        self.num_deletes = 0

    def _compact_one(self, index: int) -> bool:
        data = self.filters[index]
        size = self.bucket_size
        emptied = True
        for bucket in range(self._buckets_of(data)):
            for at in range(bucket * size, bucket * size + size):
                fp = data[at]
                if not fp:
                    continue
                alt = alt_index(fp, bucket)
                for earlier in self.filters[:index]:
                    slot = self._free_slot(earlier, bucket, alt)
                    if slot is not None:
                        earlier[slot] = fp
                        data[at] = 0
                        break
                else:
                    emptied = False
        if emptied and index == len(self.filters) - 1:
            self.filters.pop()
        return emptied

    # --- figures -------------------------------------------------------------------------

    def memory_usage(self) -> int:
        return FILTER_BYTES + SUB_BYTES * len(self.filters) + sum(len(data) for data in self.filters)

    # --- CF.SCANDUMP and CF.LOADCHUNK --------------------------------------------------------

    def header(self) -> bytes:
        return HEADER.pack(self.num_items, self.num_buckets, self.num_deletes, len(self.filters),
                           self.bucket_size, self.max_iterations, self.expansion)

    def chunk(self, position: int) -> tuple[int, bytes] | None:
        """CF_GetEncodedChunk: the next bytes from iterator `position` and the iterator
        after them; None past the end. A sub-filter that fits one chunk goes whole."""
        offset = position - 1
        for data in self.filters:
            if offset < len(data):
                break
            offset -= len(data)
        else:
            return None
        if len(data) <= MAX_CHUNK:
            return position + len(data), bytes(data)
        piece = bytes(data[offset:offset + MAX_CHUNK])
        return position + len(piece), piece

    @classmethod
    def from_header(cls, blob: bytes) -> CuckooFilter | None:
        """CFHeader_Load, refusing a header this process cannot honour."""
        items, buckets, deletes, count, bucket_size, iterations, expansion = HEADER.unpack(blob)
        if not count or not bucket_size or not buckets:
            return None
        total, size = 0, buckets * bucket_size
        for _ in range(count):  # every sub-filter must fit, whatever the header claims
            total += size
            if not size or total > MAX_BYTES:  # (an empty sub-filter: the module divides by 0)
                return None
            size *= expansion
        cf = cls(buckets, bucket_size, iterations, expansion)
        cf.num_items, cf.num_deletes = items, deletes
        for _ in range(count):
            cf.grow()
        return cf

    def load_chunk(self, position: int, data: bytes) -> bool:
        """CF_LoadEncodedChunk: `data` is what CF.SCANDUMP answered with `position`."""
        if not data:
            return False
        offset = position - len(data) - 1
        if offset < 0:
            return False
        for target in self.filters:
            if offset < len(target):
                if offset + len(data) > len(target):
                    return False
                target[offset:offset + len(data)] = data
                return True
            offset -= len(target)
        return False

    def rewrite_commands(self, key: bytes) -> list[list[bytes]]:
        """CFAofRewrite: CF.LOADCHUNK of the header, then of each chunk."""
        commands = [[b"CF.LOADCHUNK", key, b"1", self.header()]]
        position = 1
        while (found := self.chunk(position)) is not None:
            position, data = found
            commands.append([b"CF.LOADCHUNK", key, b"%d" % position, data])
        return commands

    # --- the module type -----------------------------------------------------------------------

    def payload(self) -> bytes:
        """CFRdbSave's fields, as RedisModule_Save* writes them."""
        out = ModuleWriter()
        for number in (len(self.filters), self.num_buckets, self.num_items, self.num_deletes,
                       self.bucket_size, self.max_iterations, self.expansion):
            out.unsigned(number)
        for data in self.filters:
            out.unsigned(self._buckets_of(data))
            out.buffer(bytes(data))
        return out.payload()

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> CuckooFilter:
        """CFRdbLoad, every encoding version up to 4 (before 4: no deletes, bucket size 2,
        20 iterations, expansion 1, every sub-filter of the same buckets)."""
        if encoding_version > cls.ENCODING_VERSION:
            raise ValueError("a newer cuckoo filter encoding")
        fields = ModuleReader(data)
        count, buckets, items = fields.unsigned(), fields.unsigned(), fields.unsigned()
        if encoding_version < 4:
            cf = cls(buckets, 2, 20, 1)
        else:
            deletes, bucket_size, iterations, expansion = (fields.unsigned() for _ in range(4))
            cf = cls(buckets, bucket_size, iterations, expansion)
            cf.num_deletes = deletes
        cf.num_items = items
        if not cf.bucket_size or not buckets or count > 0xFFFF:
            raise ValueError("not a cuckoo filter")
        for _ in range(count):
            sub_buckets = fields.unsigned() if encoding_version >= 4 else buckets
            bucket_data = fields.buffer()
            if not sub_buckets or len(bucket_data) != sub_buckets * cf.bucket_size:
                raise ValueError("not a cuckoo filter")
            cf.filters.append(bytearray(bucket_data))
        fields.finish()
        if not cf.filters:
            raise ValueError("not a cuckoo filter")
        return cf

    def copy(self) -> CuckooFilter:
        twin = CuckooFilter(self.num_buckets, self.bucket_size, self.max_iterations, self.expansion)
        twin.num_items, twin.num_deletes = self.num_items, self.num_deletes
        twin.filters = [bytearray(data) for data in self.filters]
        return twin
