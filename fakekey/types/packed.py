"""What the packed forms of small hashes, sets and sorted sets share (types/hash.py,
set.py, zset.py): each item in one `bytes`, behind a length byte. A packed value is
built by joining slices and these one-byte `bytes`, the cheapest way to a new `bytes`
(formatting with `%` costs several times more per write)."""

from __future__ import annotations

from typing import Final

MAX_ITEM: Final = 255  # the longest item a length byte describes
LENGTH_BYTE: Final[tuple[bytes, ...]] = tuple(bytes((n,)) for n in range(MAX_ITEM + 1))
