"""The list type: a deque of byte strings (O(1) at both ends, as a quicklist is)."""

from __future__ import annotations

from collections import deque
from typing import Any

# Bytes a listpack spends per entry beyond the data (encoding byte + backlen), roughly.
_ENTRY_OVERHEAD = 2
_LISTPACK_HEADER = 7
_SIZE_LIMITS = {-1: 4096, -2: 8192, -3: 16384, -4: 32768, -5: 65536}


class ListValue(deque):
    TYPE_NAME = "list"

    def copy(self) -> ListValue:
        return ListValue(self)

    def encoding(self, state: Any) -> bytes:
        """listpack while the list fits one node of list-max-listpack-size, else quicklist."""
        limit = state.config["list-max-listpack-size"]
        if limit > 0:
            return b"listpack" if len(self) <= limit else b"quicklist"
        max_bytes = _SIZE_LIMITS.get(limit, 8192)
        size = _LISTPACK_HEADER
        for item in self:
            size += len(item) + _ENTRY_OVERHEAD + (len(item) > 63) + (len(item) > 4095) * 3
            if size > max_bytes:
                return b"quicklist"
        return b"listpack"
