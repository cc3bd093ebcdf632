"""The list type: a deque of byte strings (O(1) at both ends, as a quicklist is)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakekey.types.value import Configured

# Bytes a listpack spends per entry beyond the data (encoding byte + backlen), roughly.
_ENTRY_OVERHEAD = 2
_LISTPACK_HEADER = 7
_SIZE_LIMITS = {-1: 4096, -2: 8192, -3: 16384, -4: 32768, -5: 65536}
# A node limited by count never grows past this many bytes either (quicklist's
# SIZE_SAFETY_LIMIT).
_SAFETY_LIMIT = 8192


def _entry_size(item: bytes) -> int:
    return len(item) + _ENTRY_OVERHEAD + (len(item) > 63) + (len(item) > 4095) * 3


class ListValue(deque):
    TYPE_NAME = "list"

    def copy(self) -> ListValue:
        return ListValue(self)

    def encoding(self, state: Configured) -> bytes:
        """listpack while the whole list fits one node of list-max-listpack-size (a
        count, 0 read as 1, and a byte size), else quicklist."""
        max_count, max_bytes = _node_limits(state)
        if max_count is not None and len(self) > max_count:
            return b"quicklist"
        size = _LISTPACK_HEADER
        for item in self:
            size += _entry_size(item)
            if size > max_bytes:
                return b"quicklist"
        return b"listpack"

    def nodes(self, state: Configured) -> int:
        """How many quicklist nodes hold this list: filled in order while an entry fits,
        as quicklist inserts do (an entry too big for any node gets one of its own)."""
        max_count, max_bytes = _node_limits(state)
        count, in_node, size = 1, 0, _LISTPACK_HEADER
        for item in self:
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
    limit = state.config["list-max-listpack-size"]
    if limit >= 0:
        return max(limit, 1), _SAFETY_LIMIT
    return None, _SIZE_LIMITS[max(limit, -5)]  # below -5: the 64 KiB level
