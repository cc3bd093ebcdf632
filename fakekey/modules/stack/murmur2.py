"""MurmurHash2, 32-bit (Austin Appleby's, public domain), as RedisBloom's Count-Min
Sketch and Top-K hash their items: one hash per row, the row number as the seed. Written
out here so a sketch puts an item in the very counters Redis Stack would."""

from __future__ import annotations

from typing import Final

_M: Final = 0x5BD1E995
_MASK: Final = 0xFFFFFFFF


def murmur2(data: bytes, seed: int) -> int:
    """MurmurHash2 of `data` (read as little-endian 4-byte words) with `seed`."""
    length = len(data)
    h = (seed ^ length) & _MASK
    whole = length - (length & 3)
    for pos in range(0, whole, 4):
        k = int.from_bytes(data[pos : pos + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h
