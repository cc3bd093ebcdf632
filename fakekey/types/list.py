"""The list type: a small list packed in one `bytes`, a bigger one a deque of byte strings
(O(1) at both ends, as a quicklist is).

Representation, known only here. A list of at most PACKED_MAX_ITEMS elements of at most
255 bytes each, PACKED_MAX_BYTES in all, is one `bytes` (`_packed`): each element behind
a length byte and followed by it again (a listpack's backlen), so both ends are reached in
O(1) and an index by a walk from the nearer end, as Valkey walks its listpack. That costs
the data and two bytes an element, where a deque of `bytes` costs a 500-byte block and
~35 bytes of object header an element (bench/memory.py). A write makes a new `bytes`:
copying a few KiB is cheaper than the Python objects it saves. The list moves to a deque
when it outgrows the packed form, and back once it shrinks to half of it (REPACK_AT
elements), as Valkey turns a quicklist of one node back into a listpack.

Commands use the deque's methods (append, appendleft, pop, popleft, extend, extendleft,
insert, index, indexing, iteration); the representation never shows. OBJECT ENCODING is
computed from the elements against list-max-listpack-size (`encoding`, `nodes`), whatever
the representation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final

from fakekey.types.packed import LENGTH_BYTE, MAX_ITEM

if TYPE_CHECKING:
    from fakekey.types.value import Configured

# The packed form's bounds: a linear walk stays short and a write copies a few KiB at most.
PACKED_MAX_ITEMS: Final = 128
PACKED_MAX_BYTES: Final = 4096
REPACK_AT: Final = PACKED_MAX_ITEMS // 2  # a deque this short is packed again, if it fits
_LENGTH: Final = LENGTH_BYTE  # read per write: a Final name, not a module lookup

# Bytes a listpack spends per entry beyond the data (encoding byte + backlen), roughly.
_ENTRY_OVERHEAD: Final = 2
_LISTPACK_HEADER: Final = 7
_SIZE_LIMITS: Final = {-1: 4096, -2: 8192, -3: 16384, -4: 32768, -5: 65536}
# A node limited by count never grows past this many bytes either (quicklist's
# SIZE_SAFETY_LIMIT).
_SAFETY_LIMIT: Final = 8192


def _entry_size(size: int) -> int:
    """A listpack entry's bytes for an element of `size` bytes."""
    return size + _ENTRY_OVERHEAD + (size > 63) + (size > 4095) * 3


# --- the packed form -------------------------------------------------------------------------


def _unpack(packed: bytes) -> list[bytes]:
    items = []
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 1 + packed[pos]
        items.append(packed[pos + 1:at])
        pos = at + 1
    return items


def _sizes(packed: bytes) -> list[int]:
    """The elements' lengths, in order."""
    sizes = []
    pos = 0
    end = len(packed)
    while pos < end:
        size = packed[pos]
        sizes.append(size)
        pos += size + 2
    return sizes


def _entries(items: list[bytes], room: int) -> bytes | None:
    """The packed entries of `items` in order, or None when one is too long or together
    they take more than `room` bytes."""
    parts = []
    total = 0
    for item in items:
        size = len(item)
        if size > MAX_ITEM:
            return None
        total += size + 2
        length = _LENGTH[size]
        parts.append(length)
        parts.append(item)
        parts.append(length)
    if total > room:
        return None
    return b"".join(parts)


def _find(packed: bytes, item: bytes) -> int:
    """The index of the first element equal to `item`, or -1."""
    size = len(item)
    pos = 0
    end = len(packed)
    index = 0
    while pos < end:
        length = packed[pos]
        if length == size and packed[pos + 1:pos + 1 + size] == item:
            return index
        pos += length + 2
        index += 1
    return -1


class ListValue:
    """A list of byte strings with a deque's methods."""

    TYPE_NAME = "list"
    __slots__ = ("_packed", "_count", "_deque")

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        self._packed = b""  # the packed form while _deque is None
        self._count = 0  # the elements in `_packed`
        self._deque: deque[bytes] | None = None
        self.extend(items)

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        items = self._deque
        return self._count if items is None else len(items)

    def __bool__(self) -> bool:
        items = self._deque
        return self._count > 0 if items is None else len(items) > 0

    def __iter__(self) -> Iterator[bytes]:
        items = self._deque
        return iter(_unpack(self._packed) if items is None else items)

    def __reversed__(self) -> Iterator[bytes]:
        items = self._deque
        if items is None:
            return reversed(_unpack(self._packed))
        return reversed(items)

    def __contains__(self, item: object) -> bool:
        items = self._deque
        if items is None:
            return isinstance(item, bytes) and _find(self._packed, item) >= 0
        return item in items

    def __getitem__(self, index: int) -> bytes:
        items = self._deque
        if items is not None:
            return items[index]
        packed = self._packed
        pos = self._offset(self._index(index))
        return packed[pos + 1:pos + 1 + packed[pos]]

    def index(self, item: bytes) -> int:
        """The first position of `item`; ValueError if absent."""
        items = self._deque
        if items is not None:
            return items.index(item)
        found = _find(self._packed, item)
        if found < 0:
            raise ValueError(f"{item!r} is not in list")
        return found

    def is_packed(self) -> bool:
        """Whether the elements are held in the packed form (tests)."""
        return self._deque is None

    def _index(self, index: int) -> int:
        """A deque's index rules: negatives from the end, IndexError outside."""
        count = self._count
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("deque index out of range")
        return index

    def _offset(self, index: int) -> int:
        """Where element `index` (0 <= index <= count) starts in the packed form, walked
        from the nearer end."""
        packed = self._packed
        count = self._count
        if index <= count // 2:
            pos = 0
            for _ in range(index):
                pos += packed[pos] + 2
            return pos
        pos = len(packed)
        for _ in range(count - index):
            pos -= packed[pos - 1] + 2
        return pos

    # --- writing -----------------------------------------------------------------------

    def append(self, item: bytes) -> None:
        items = self._deque
        if items is None:
            packed = self._packed
            size = len(item)
            if size <= MAX_ITEM and self._count < PACKED_MAX_ITEMS and \
                    len(packed) + size + 2 <= PACKED_MAX_BYTES:
                length = _LENGTH[size]
                self._packed = b"".join((packed, length, item, length))
                self._count += 1
                return
            items = self._unpacked()
        items.append(item)

    def appendleft(self, item: bytes) -> None:
        items = self._deque
        if items is None:
            packed = self._packed
            size = len(item)
            if size <= MAX_ITEM and self._count < PACKED_MAX_ITEMS and \
                    len(packed) + size + 2 <= PACKED_MAX_BYTES:
                length = _LENGTH[size]
                self._packed = b"".join((length, item, length, packed))
                self._count += 1
                return
            items = self._unpacked()
        items.appendleft(item)

    def extend(self, values: Iterable[bytes]) -> None:
        items = self._deque
        if items is None:
            added = values if isinstance(values, list) else list(values)
            if len(added) == 1:  # RPUSH of one element, the commonest
                self.append(added[0])
                return
            entries = self._fitting(added)
            if entries is not None:
                self._packed += entries
                self._count += len(added)
                return
            items = self._unpacked()
            values = added
        items.extend(values)

    def extendleft(self, values: Iterable[bytes]) -> None:
        """Each value pushed at the head in turn: the last ends first."""
        items = self._deque
        if items is None:
            added = list(values)
            if len(added) == 1:  # LPUSH of one element, the commonest
                self.appendleft(added[0])
                return
            added.reverse()
            entries = self._fitting(added)
            if entries is not None:
                self._packed = entries + self._packed
                self._count += len(added)
                return
            items = self._unpacked()
            added.reverse()
            values = added
        items.extendleft(values)

    def pop(self) -> bytes:
        items = self._deque
        if items is not None:
            item = items.pop()
            if len(items) == REPACK_AT:
                self._repack()
            return item
        packed = self._packed
        end = len(packed)
        if not end:
            raise IndexError("pop from an empty deque")
        start = end - packed[end - 1] - 2
        self._packed = packed[:start]
        self._count -= 1
        return packed[start + 1:end - 1]

    def popleft(self) -> bytes:
        items = self._deque
        if items is not None:
            item = items.popleft()
            if len(items) == REPACK_AT:
                self._repack()
            return item
        packed = self._packed
        if not packed:
            raise IndexError("pop from an empty deque")
        end = packed[0] + 2
        self._packed = packed[end:]
        self._count -= 1
        return packed[1:end - 1]

    def __setitem__(self, index: int, item: bytes) -> None:
        items = self._deque
        if items is None:
            index = self._index(index)
            packed = self._packed
            size = len(item)
            pos = self._offset(index)
            end = pos + packed[pos] + 2
            if size <= MAX_ITEM and len(packed) - (end - pos) + size + 2 <= PACKED_MAX_BYTES:
                length = _LENGTH[size]
                self._packed = b"".join((packed[:pos], length, item, length, packed[end:]))
                return
            items = self._unpacked()
        items[index] = item

    def insert(self, index: int, item: bytes) -> None:
        """Before element `index` (the end past the last), as deque.insert."""
        items = self._deque
        if items is None:
            count = self._count
            if index < 0:
                index = max(index + count, 0)
            index = min(index, count)
            packed = self._packed
            size = len(item)
            if size <= MAX_ITEM and count < PACKED_MAX_ITEMS and \
                    len(packed) + size + 2 <= PACKED_MAX_BYTES:
                pos = self._offset(index)
                length = _LENGTH[size]
                self._packed = b"".join((packed[:pos], length, item, length, packed[pos:]))
                self._count = count + 1
                return
            items = self._unpacked()
        items.insert(index, item)

    def clear(self) -> None:
        self._packed = b""
        self._count = 0
        self._deque = None

    def copy(self) -> ListValue:
        twin = ListValue()
        items = self._deque
        if items is None:
            twin._packed = self._packed  # immutable: shared
            twin._count = self._count
        else:
            twin._deque = deque(items)
        return twin

    def _fitting(self, added: list[bytes]) -> bytes | None:
        """The packed entries of `added` if the packed form can take them all."""
        if self._count + len(added) > PACKED_MAX_ITEMS:
            return None
        return _entries(added, PACKED_MAX_BYTES - len(self._packed))

    def _unpacked(self) -> deque[bytes]:
        """To the deque form (the list outgrew the packed one)."""
        items = deque(_unpack(self._packed))
        self._deque = items
        self._packed = b""
        self._count = 0
        return items

    def _repack(self) -> None:
        """Back to the packed form if the elements fit it (they shrank to REPACK_AT)."""
        items = self._deque
        assert items is not None
        entries = _entries(list(items), PACKED_MAX_BYTES)
        if entries is not None:
            self._packed = entries
            self._count = len(items)
            self._deque = None

    def __repr__(self) -> str:
        return f"ListValue({list(self)!r})"

    # --- Valkey's encoding -------------------------------------------------------------

    def _lengths(self) -> list[int]:
        items = self._deque
        if items is None:
            return _sizes(self._packed)
        return [len(item) for item in items]

    def encoding(self, state: Configured) -> bytes:
        """listpack while the whole list fits one node of list-max-listpack-size (a
        count, 0 read as 1, and a byte size), else quicklist."""
        max_count, max_bytes = _node_limits(state)
        if max_count is not None and len(self) > max_count:
            return b"quicklist"
        size = _LISTPACK_HEADER
        for item in self._lengths():
            size += _entry_size(item)
            if size > max_bytes:
                return b"quicklist"
        return b"listpack"

    def nodes(self, state: Configured) -> int:
        """How many quicklist nodes hold this list: filled in order while an entry fits,
        as quicklist inserts do (an entry too big for any node gets one of its own)."""
        max_count, max_bytes = _node_limits(state)
        count, in_node, size = 1, 0, _LISTPACK_HEADER
        for item in self._lengths():
            entry = _entry_size(item)
            if in_node and ((max_count is not None and in_node >= max_count)
                            or size + entry > max_bytes):
                count += 1
                in_node, size = 0, _LISTPACK_HEADER
            in_node += 1
            size += entry
        return count


def _node_limits(state: Configured) -> tuple[int | None, int]:
    """list-max-listpack-size as (entries per node or None, bytes per node)."""
    limit: int = state.config["list-max-listpack-size"]
    if limit >= 0:
        return max(limit, 1), _SAFETY_LIMIT
    return None, _SIZE_LIMITS[max(limit, -5)]  # below -5: the 64 KiB level
