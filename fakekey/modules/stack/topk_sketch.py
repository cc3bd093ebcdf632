"""RedisBloom's Top-K (TopK-TYPE), the HeavyKeeper sketch: `depth` rows of `width`
buckets (a fingerprint and a 32-bit count) and a min-heap of the `k` heaviest items.
An item's bucket in a row is MurmurHash2 seeded with the row number, modulo the width; its
fingerprint is MurmurHash2 seeded with 1919. A bucket held by another fingerprint decays
by one with probability decay^count, and is taken over when it reaches zero. An item
counted at least as high as the list's least enters the list in its place; the heap keeps
RedisBloom's own sift-down, so the list and the expelled items are the module's."""

from __future__ import annotations

import random
import sys
from array import array
from typing import Final

from fakekey.modules.stack import BLOOM_MODULE
from fakekey.modules.stack.module_io import ModuleReader, ModuleWriter
from fakekey.modules.stack.murmur2 import murmur2
from fakekey.types.module_value import ModuleValue, register_module_type

FINGERPRINT_SEED: Final = 1919  # GA in topk.c
DECAY_TABLE: Final = 256  # TOPK_DECAY_LOOKUP_TABLE
COUNT_MASK: Final = 0xFFFFFFFF  # counter_t is uint32_t
MAX_BUCKETS = 1 << 27  # buckets (and list slots) fakekey allocates at most; past it creation fails
_HEAP_BUCKET = 24  # sizeof(HeapBucket): fp, itemlen, item pointer, count (padded)
_SIZEOF_TOPK = 2088  # sizeof(TopK) with its 256-entry decay table


class HeapSlot:
    """A HeapBucket: an item of the top list (item None: a slot not yet used)."""

    __slots__ = ("fp", "item", "count")

    def __init__(self, fp: int = 0, item: bytes | None = None, count: int = 0) -> None:
        self.fp = fp
        self.item = item
        self.count = count

    def copy(self) -> HeapSlot:
        return HeapSlot(self.fp, self.item, self.count)


EMPTY = HeapSlot()  # every unused slot: never changed in place (only a listed item's slot is)


def heapify_down(heap: list[HeapSlot], start: int) -> None:
    """topk.c's heapifyDown (a min-heap on count), to the letter: equal counts move down."""
    length = len(heap)
    if length < 2 or (length - 2) // 2 < start:
        return
    child = 2 * start + 1
    if child + 1 < length and heap[child].count > heap[child + 1].count:
        child += 1
    if heap[child].count > heap[start].count:
        return
    top = heap[start]
    while True:
        heap[start] = heap[child]
        start = child
        if (length - 2) // 2 < child:
            break
        child = 2 * child + 1
        if child + 1 < length and heap[child].count > heap[child + 1].count:
            child += 1
        if not heap[child].count < top.count:
            break
    heap[start] = top


@register_module_type
class TopK(ModuleValue):
    TYPE_NAME = "TopK-TYPE"
    ENCODING_VERSION = 0
    MODULE_NAME = BLOOM_MODULE
    MODULE_IO = True  # the payload is RedisBloom's own rdb_save fields

    __slots__ = ("k", "width", "depth", "decay", "fps", "counts", "heap", "decays")

    def __init__(self, k: int, width: int, depth: int, decay: float) -> None:
        self.k = k
        self.width = width
        self.depth = depth
        self.decay = decay
        self.fps = array("I", [0]) * (width * depth)  # the buckets' fingerprints, row after row
        self.counts = array("I", [0]) * (width * depth)
        self.heap = [EMPTY] * k
        self.decays = [decay**i for i in range(DECAY_TABLE)]  # lookupTable

    def _in_heap(self, item: bytes, fp: int) -> HeapSlot | None:
        """checkExistInHeap: the item's slot in the list, or None."""
        for slot in self.heap:
            if slot.fp == fp and slot.item == item:
                return slot
        return None

    def _decay_chance(self, count: int) -> float:
        """decay^count, from the table up to 255 and by the module's own split past it."""
        table = self.decays
        if count < DECAY_TABLE:
            return table[count]
        return float(table[DECAY_TABLE - 1] ** (count // (DECAY_TABLE - 1))) * table[count % (DECAY_TABLE - 1)]

    def add(self, item: bytes, increment: int) -> tuple[bool, bytes | None]:
        """TopK_Add: count the item; (whether it entered the list, the item it expelled)."""
        fp = murmur2(item, FINGERPRINT_SEED)
        heap_min = self.heap[0].count
        most = 0
        fps, counts, width = self.fps, self.counts, self.width
        for row in range(self.depth):
            at = row * width + murmur2(item, row) % width
            if counts[at] == 0:
                fps[at] = fp
                counts[at] = increment
                most = max(most, increment)
            elif fps[at] == fp:
                counts[at] = (counts[at] + increment) & COUNT_MASK
                most = max(most, counts[at])
            else:
                most = max(most, self._decay(at, fp, increment))
        if most < heap_min:
            return False, None
        return self._settle(item, fp, most)

    def _decay(self, at: int, fp: int, increment: int) -> int:
        """A bucket held by another item: one decay chance per unit of the increment; an
        emptied bucket is taken over with what remains of it. That count, or 0."""
        counts = self.counts
        for left in range(increment, 0, -1):
            if random.random() < self._decay_chance(counts[at]):
                counts[at] -= 1
                if counts[at] == 0:
                    self.fps[at] = fp
                    counts[at] = left
                    return left
        return 0

    def _settle(self, item: bytes, fp: int, most: int) -> tuple[bool, bytes | None]:
        """The list after a count of `most`, at least its least: a listed item's count
        (not the max of the two: the buckets may have decayed), else the item takes the
        least one's place."""
        heap = self.heap
        found = self._in_heap(item, fp)
        if found is not None:
            found.count = most
            heapify_down(heap, heap.index(found))
            return False, None
        expelled = heap[0].item
        heap[0] = HeapSlot(fp, item, most)
        heapify_down(heap, 0)
        return True, expelled

    def query(self, item: bytes) -> bool:
        return self._in_heap(item, murmur2(item, FINGERPRINT_SEED)) is not None

    def count(self, item: bytes) -> int:
        """TopK_Count: the largest of the item's buckets that carry its fingerprint (for
        an item in the list, only those at least the list's least count)."""
        fp = murmur2(item, FINGERPRINT_SEED)
        heap_min = self.heap[0].count
        listed = self._in_heap(item, fp) is not None
        best = 0
        for row in range(self.depth):
            at = row * self.width + murmur2(item, row) % self.width
            if self.fps[at] == fp and (not listed or self.counts[at] >= heap_min):
                best = max(best, self.counts[at])
        return best

    def ranked(self) -> list[HeapSlot]:
        """TopK_List: the heap by count, largest first, up to the first unused slot."""
        ordered = sorted(self.heap, key=lambda slot: -slot.count)
        out = []
        for slot in ordered:
            if slot.count == 0:
                break
            out.append(slot)
        return out

    # --- the module value ----------------------------------------------------------------

    def copy(self) -> TopK:
        twin = TopK.__new__(TopK)
        twin.k, twin.width, twin.depth, twin.decay = self.k, self.width, self.depth, self.decay
        twin.fps, twin.counts = array("I", self.fps), array("I", self.counts)
        twin.heap = [slot if slot is EMPTY else slot.copy() for slot in self.heap]
        twin.decays = list(self.decays)
        return twin

    def payload(self) -> bytes:
        """TopKRdbSave: k, width, depth, decay, the buckets and the heap as C laid them out
        (the heap's item pointers as zeros), then each item NUL-terminated ("" unused)."""
        out = ModuleWriter()
        out.unsigned(self.k)
        out.unsigned(self.width)
        out.unsigned(self.depth)
        out.double(self.decay)
        buckets = array("I", [0]) * (2 * len(self.fps))  # Bucket {fp, count}, interleaved
        buckets[0::2] = self.fps
        buckets[1::2] = self.counts
        out.buffer(_little_endian(buckets).tobytes())
        heap = bytearray()
        for slot in self.heap:
            length = len(slot.item) if slot.item is not None else 0
            heap += (slot.fp.to_bytes(4, "little") + length.to_bytes(4, "little") + bytes(8)
                     + slot.count.to_bytes(4, "little") + bytes(4))
        out.buffer(bytes(heap))
        for slot in self.heap:
            out.buffer(slot.item + b"\0" if slot.item is not None else b"\0")
        return out.payload()

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> TopK:
        if encoding_version > cls.ENCODING_VERSION:
            raise ValueError(f"Top-K encoding version {encoding_version} is newer than 0")
        src = ModuleReader(data)
        k, width, depth = src.unsigned(), src.unsigned(), src.unsigned()
        decay = src.double()
        buckets, heap = src.buffer(), src.buffer()
        if min(k, width, depth) < 1 or len(buckets) != 8 * width * depth or len(heap) != _HEAP_BUCKET * k:
            raise ValueError("Top-K: buffers do not match k, width and depth")
        sketch = cls(k, width, depth, decay)
        words = array("I")
        words.frombytes(buckets)
        words = _little_endian(words)
        sketch.fps, sketch.counts = words[0::2], words[1::2]
        for i in range(k):
            raw = heap[_HEAP_BUCKET * i : _HEAP_BUCKET * (i + 1)]
            item = src.buffer()
            fp, count = int.from_bytes(raw[0:4], "little"), int.from_bytes(raw[16:20], "little")
            if len(item) > 1 or fp or count:
                sketch.heap[i] = HeapSlot(fp, item[:-1] if len(item) > 1 else None, count)
        src.finish()
        return sketch

    def memory_usage(self) -> int:
        """TopKMemUsage: the struct, the buckets and the heap."""
        return _SIZEOF_TOPK + self.width * self.depth * 8 + self.k * _HEAP_BUCKET


def _little_endian(words: array) -> array:
    """uint32 words as the module's buffers lay them out (little-endian)."""
    if sys.byteorder == "big":  # pragma: no cover
        words = array("I", words)
        words.byteswap()
    return words
