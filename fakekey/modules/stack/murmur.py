"""MurmurHash64A, the hash RedisBloom's Bloom and Cuckoo filters use (64-bit, little
endian words), so an item lands on the bits and buckets RedisBloom would pick."""

from __future__ import annotations

import struct
from typing import Final

U64: Final = (1 << 64) - 1
M: Final = 0xC6A4A7935BD1E995
R: Final = 47


def murmur64a(data: bytes, seed: int) -> int:
    """Austin Appleby's MurmurHash64A of `data` with a 64-bit seed."""
    length = len(data)
    h = (seed ^ (length * M)) & U64
    whole = length // 8 * 8
    for (k,) in struct.iter_unpack("<Q", data[:whole]):
        k = (k * M) & U64
        k ^= k >> R
        k = (k * M) & U64
        h ^= k
        h = (h * M) & U64
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * M) & U64
    h ^= h >> R
    h = (h * M) & U64
    h ^= h >> R
    return h
