"""RedisBloom's Count-Min Sketch (CMSk-TYPE): `depth` rows of `width` 32-bit counters; an
item counts in one counter per row (MurmurHash2 seeded with the row number, modulo the
width) and its estimate is the least of them. `count` is the total of every increment."""

from __future__ import annotations

import math
import struct
import sys
from array import array

from fakekey.modules.stack import BLOOM_MODULE
from fakekey.modules.stack.module_io import ModuleReader, ModuleWriter
from fakekey.modules.stack.murmur2 import murmur2
from fakekey.types.module_value import ModuleValue, register_module_type

COUNTER_MAX = 0xFFFFFFFF  # a counter is a uint32_t: it stops there (an overflow)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_CELLS = 1 << 28  # counters fakekey allocates at most (1 GiB); past it creation fails
_POINTER = 8  # sizeof(cms) in CMSMemUsage (a pointer, as the module computes it)


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def dims_from_prob(error: float, probability: float) -> tuple[int, int] | None:
    """CMS_DimFromProb: width ceil(2 / error); depth ceil(log10f(p) / log10f(0.5)), in the
    single precision of C's log10f (a probability below float's range is 0 there: no
    finite depth, None)."""
    single = _float32(probability)
    if single == 0:
        return None
    ratio = _float32(_float32(math.log10(single)) / _float32(math.log10(0.5)))
    return math.ceil(2 / error), math.ceil(ratio)


@register_module_type
class CountMinSketch(ModuleValue):
    TYPE_NAME = "CMSk-TYPE"
    ENCODING_VERSION = 0
    MODULE_NAME = BLOOM_MODULE
    MODULE_IO = True  # the payload is RedisBloom's own rdb_save fields

    __slots__ = ("width", "depth", "count", "cells")

    def __init__(self, width: int, depth: int, count: int = 0, cells: array | None = None) -> None:
        self.width = width
        self.depth = depth
        self.count = count  # the total of all increments (CMS.INFO's count)
        self.cells = cells if cells is not None else array("I", [0]) * (width * depth)

    def _slots(self, item: bytes) -> list[int]:
        width = self.width
        return [murmur2(item, row) % width + row * width for row in range(self.depth)]

    def increment(self, item: bytes, by: int) -> int:
        """Add `by` to the item's counters (each stops at COUNTER_MAX); its new estimate."""
        cells = self.cells
        least = COUNTER_MAX
        for slot in self._slots(item):
            value = min(cells[slot] + by, COUNTER_MAX)
            cells[slot] = value
            least = min(least, value)
        self.count += by
        return least

    def query(self, item: bytes) -> int:
        cells = self.cells
        return min(cells[slot] for slot in self._slots(item))

    def same_shape(self, other: CountMinSketch) -> bool:
        return self.width == other.width and self.depth == other.depth

    def merged_from(self, sources: list[CountMinSketch], weights: list[int]) -> bool:
        """Become the weighted sum of `sources` (this sketch may be one of them); False,
        with nothing changed, when a counter or the total would leave its range."""
        cells: list[int] = []
        columns = [source.cells for source in sources]
        for slot in range(self.width * self.depth):
            total = _weighted_sum([column[slot] for column in columns], weights)
            if total is None or not 0 <= total <= COUNTER_MAX:
                return False
            cells.append(total)
        count = _weighted_sum([source.count for source in sources], weights)
        if count is None or count < 0:
            return False
        self.cells = array("I", cells)
        self.count = count
        return True

    def copy(self) -> CountMinSketch:
        return CountMinSketch(self.width, self.depth, self.count, array("I", self.cells))

    def payload(self) -> bytes:
        """CMSRdbSave: width, depth, count, then the counters as one buffer."""
        out = ModuleWriter()
        out.unsigned(self.width)
        out.unsigned(self.depth)
        out.unsigned(self.count)
        out.buffer(_little_endian(self.cells).tobytes())
        return out.payload()

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> CountMinSketch:
        if encoding_version > cls.ENCODING_VERSION:
            raise ValueError(f"CMS encoding version {encoding_version} is newer than 0")
        src = ModuleReader(data)
        width, depth, count = src.unsigned(), src.unsigned(), src.unsigned()
        raw = src.buffer()
        src.finish()
        if width < 1 or depth < 1 or len(raw) != 4 * width * depth:
            raise ValueError("CMS: counters do not match width x depth")
        cells = array("I")
        cells.frombytes(raw)
        return cls(width, depth, count, _little_endian(cells))

    def memory_usage(self) -> int:
        """CMSMemUsage: a pointer and width x depth of size_t."""
        return _POINTER + self.width * self.depth * 8


def _weighted_sum(values: list[int], weights: list[int]) -> int | None:
    """The sum of value x weight in signed 64 bits; None where RedisBloom's checked
    arithmetic (__builtin_mul_overflow, __builtin_add_overflow) would overflow."""
    total = 0
    for value, weight in zip(values, weights, strict=True):
        product = value * weight
        if not INT64_MIN <= product <= INT64_MAX:
            return None
        total += product
        if not INT64_MIN <= total <= INT64_MAX:
            return None
    return total


def _little_endian(cells: array) -> array:
    """The counters as RedisBloom's buffer lays them out (little-endian uint32)."""
    if sys.byteorder == "big":  # pragma: no cover
        cells = array("I", cells)
        cells.byteswap()
    return cells
